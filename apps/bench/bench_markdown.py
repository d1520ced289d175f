"""The generated sections of BENCHMARKS.md: each lies between its own begin and end markers, and
only that text is replaced; the rest of the report is left as it is."""
import os
import statistics


def replace_section(report, begin, end, section, heading=""):
    """Writes `section` (its text starts with `begin` and ends with `end`) into the Markdown file
    `report` in place of what lies between `begin` and `end`, or appends it, after `heading`,
    when the report has no such section. A missing report starts as "# Benchmarks"."""
    text = "# Benchmarks\n"
    if os.path.exists(report):
        with open(report) as f:
            text = f.read()
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + section + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + heading + section + "\n"
    with open(report, "w") as f:
        f.write(text)


def fmt_number(x, digits=3):
    """A number with `digits` significant digits, or a dash for None."""
    return "—" if x is None else f"{x:.{digits}g}"


def spread_text(ratio, digits=3):
    """min / median / max of the per-repetition ratios of a measured ratio, each with `digits`
    significant digits, or a dash."""
    if ratio["status"] != "ok":
        return "—"
    return " / ".join(fmt_number(ratio[k], digits)
                      for k in ("ratio_min", "ratio_median", "ratio_max"))


def paired_ratios(numerators, denominators):
    """{ratios, ratio_min, ratio_median, ratio_max} of numerators[i] / denominators[i] (the
    repetitions of two measurements, paired by position), or None when the lists differ in
    length or a denominator is missing or not positive."""
    if not numerators or not denominators or len(numerators) != len(denominators) or \
            any(x is None or x <= 0 for x in denominators) or any(x is None for x in numerators):
        return None
    ratios = [x / y for x, y in zip(numerators, denominators)]
    return {"ratios": ratios, "ratio_min": min(ratios), "ratio_median": statistics.median(ratios),
            "ratio_max": max(ratios)}
