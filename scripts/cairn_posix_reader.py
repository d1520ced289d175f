#!/usr/bin/env python3
"""Read a cairn checkpoint whose arrays are in format posix, with numpy alone (no cairn).

A cairn array tree is a directory holding ``cairn-tree.json`` (every leaf: path, kind, dtype,
global shape, and for arrays the shards, each a box of the global array written by one rank;
from version 4 on the shards are in ``cairn-tree.bin``, one section per array leaf, see
``_shards_v4``) and, in format posix, ``shards/p<rank>.bin`` (or ``shards/a<k>.bin``, shared by a group of
ranks when saved with posix_aggregation): each shard's elements in row-major order,
little-endian, ``bytes`` bytes at ``byte_offset``. An incremental save stores only the chunks
that changed; the others lie in hard links to an earlier save's files (``shards/r<k>.bin``),
and the section gives each chunk's place. A checkpoint holds ``cairn-step.json``
(its handler and items) and one such directory per item of kind ``cairn.array_tree``.

    import cairn_posix_reader as cpr
    items = cpr.read_checkpoint("ckpt/100")      # {"field": {"u": ndarray, "step": 100}, ...}
    leaves = cpr.read_tree("ckpt/100/field")     # {"u": ndarray, "step": 100}

or from a shell: ``cairn_posix_reader.py CHECKPOINT [LEAF]`` lists the leaves with their dtype
and shape, or prints one leaf (``item/leaf``).

Arrays come back in the stored, C-order shape: an array saved from Fortran (``"order": "F"``)
has its dimensions reversed (``a.T`` is the Fortran view). bfloat16 comes back as float32.
Parts of a sparse array that no rank wrote are zero. The XXH3 checksums of the index are not
checked here (``cairn verify`` does); leaves in format hdf5 are read with h5py from
``data.h5`` (dataset at the leaf path), or ``cairn convert --format posix`` first. A
compressed (zstd or zfp) leaf raises ValueError naming it, while the uncompressed leaves
beside it read as any other; ``cairn convert CHECKPOINT COPY --format posix`` writes an
uncompressed copy.
"""
import json
import os
import struct
import sys

import numpy

_DTYPES = {
    "bool": "?", "int8": "<i1", "int16": "<i2", "int32": "<i4", "int64": "<i8",
    "uint8": "<u1", "uint16": "<u2", "uint32": "<u4", "uint64": "<u8",
    "float16": "<f2", "bfloat16": "<u2", "float32": "<f4", "float64": "<f8",
    "complex64": "<c8", "complex128": "<c16",
}


def _result_dtype(name):
    return numpy.dtype("<f4") if name == "bfloat16" else numpy.dtype(_DTYPES[name])


def _decode(raw, name):
    """Elements read as stored -> numpy values (bfloat16 is the upper half of a float32)."""
    if name == "bfloat16":
        return (raw.astype("<u4") << 16).view("<f4")
    return raw


def _compression(leaf):
    """The compressor of an array leaf ("none" when its bytes are stored as they are)."""
    return leaf.get("compression", {}).get("kind", "none")


def _cuts_v4(leaf, data, at):
    """The cuts of each dimension of a grid leaf's section, and the offset after them."""
    section = leaf["section"]
    if "block" in section:
        return [list(range(0, n, b)) + [n] for n, b in zip(leaf["shape"], section["block"])], at
    cuts = []
    for blocks in section["blocks"]:
        cuts.append(list(struct.unpack_from(f"<{blocks + 1}q", data, at)))
        at += 8 * (blocks + 1)
    return cuts, at


def _shards_v4(leaf, files, binary):
    """The shards of an array leaf of a version-4 index, from its section of cairn-tree.bin:
    a block grid's cuts (unless its blocks are equal), then per shard rank (u32), file (u32,
    an entry of "files"), byte offset (u64) and, when not a grid, the box's offsets and extents
    (i64 each); the checksums follow (not read here). Little-endian throughout."""
    section = leaf["section"]
    data = binary[section["offset"]:section["offset"] + section["length"]]
    if len(data) != section["length"]:
        raise ValueError(f"cairn-tree.bin is truncated (leaf '{leaf['path']}')")
    nd = len(leaf["shape"])
    grid = "blocks" in section
    cuts, at = _cuts_v4(leaf, data, 0) if grid else ([], 0)
    cells = list(numpy.ndindex(*section["blocks"])) if grid else []
    shards = []
    for k in range(section["shard_count"]):
        rank, file, byte_offset = struct.unpack_from("<IIQ", data, at)
        at += 16
        if grid:
            offset = [cuts[d][i] for d, i in enumerate(cells[k])]
            extent = [cuts[d][i + 1] - cuts[d][i] for d, i in enumerate(cells[k])]
        else:
            box = struct.unpack_from(f"<{2 * nd}q", data, at)
            at += 16 * nd
            offset, extent = list(box[:nd]), list(box[nd:])
        count = int(numpy.prod(extent, dtype=numpy.int64))
        shards.append({"rank": rank, "file": files[file], "byte_offset": byte_offset,
                       "offset": offset, "extent": extent,
                       "bytes": count * numpy.dtype(_DTYPES[leaf["dtype"]]).itemsize})
    if section.get("referenced_chunks", 0) > 0:
        _attach_chunk_places(leaf, files, data, at, shards)
    return shards


def _attach_chunk_places(leaf, files, data, at, shards):
    """An incremental save: after the checksums (u64 per chunk, and as many chunk sizes when
    compressed), the place of every chunk of every shard in record order: file (u32, an entry
    of "files", or 0xffffffff for the shard's own file at its byte offset), 0 (u32) and the
    byte offset of the chunk in that file (u64). Sets each shard's "chunks": (file, offset,
    bytes) per chunk."""
    section = leaf["section"]
    chunk = leaf["chunk_bytes"]
    at += 8 * section["chunk_count"] * (2 if section.get("chunk_sizes") else 1)
    for shard in shards:
        places = []
        for c in range(0, shard["bytes"], chunk):
            file, _, offset = struct.unpack_from("<IIQ", data, at)
            at += 16
            size = min(chunk, shard["bytes"] - c)
            if file == 0xFFFFFFFF:
                places.append((shard["file"], shard["byte_offset"] + c, size))
            else:
                places.append((files[file], offset, size))
        shard["chunks"] = places


def _read_shard_bytes(tree_dir, leaf, shard):
    """The stored bytes of one shard: contiguous at its byte offset, or chunk by chunk from
    where an incremental save's chunks lie."""
    pieces = shard.get("chunks") or [(shard["file"], shard["byte_offset"], shard["bytes"])]
    out = bytearray()
    for file, offset, size in pieces:
        with open(os.path.join(tree_dir, file), "rb") as f:
            f.seek(offset)
            data = f.read(size)
        if len(data) != size:
            raise ValueError(f"{file} is truncated (leaf '{leaf['path']}')")
        out += data
    return bytes(out)


def read_array(tree_dir, leaf):
    """The global array of one array leaf of cairn-tree.json (a dict), from its shard files."""
    if leaf.get("format") != "posix":
        raise ValueError(f"leaf '{leaf['path']}' is in format {leaf.get('format')}: read it "
                         f"from {os.path.join(tree_dir, 'data.h5')} with h5py")
    if _compression(leaf) != "none":
        raise ValueError(f"leaf '{leaf['path']}' of {tree_dir} is stored {_compression(leaf)}-"
                         f"compressed, which this reader does not decompress: write an "
                         f"uncompressed copy with `cairn convert CHECKPOINT COPY --format posix`")
    name = leaf["dtype"]
    stored = numpy.dtype(_DTYPES[name])
    out = numpy.zeros(leaf["shape"], dtype=_result_dtype(name))
    for shard in leaf["shards"]:
        extent = shard["extent"]
        count = int(numpy.prod(extent, dtype=numpy.int64))
        if count * stored.itemsize != shard["bytes"]:
            raise ValueError(f"leaf '{leaf['path']}': shard of rank {shard['rank']} holds "
                             f"{shard['bytes']} bytes, not {count} elements of {name}")
        data = _read_shard_bytes(tree_dir, leaf, shard)
        raw = numpy.frombuffer(data, dtype=stored, count=count).reshape(extent)
        where = tuple(slice(o, o + e) for o, e in zip(shard["offset"], extent))
        out[where] = _decode(raw, name)
    return out


def _value(leaf):
    """A scalar, string or JSON leaf's value as Python (scalars with their numpy dtype)."""
    if leaf["kind"] == "scalar":
        v = leaf["value"]
        return _result_dtype(v["dtype"]).type(v["value"])
    return leaf["value"]


def read_index(tree_dir):
    """The leaves of cairn-tree.json in `tree_dir` (a list of dicts), any version 1 to 7; for
    versions 4 to 7 (5 to 7: sections may give chunk places, for an incremental save; 7: a
    leaf's zstd chunks are shuffled, which this reader refuses as any compressed leaf) each
    array leaf's "shards" are read from cairn-tree.bin."""
    with open(os.path.join(tree_dir, "cairn-tree.json")) as f:
        index = json.load(f)
    if index.get("format") != "cairn-tree" or index.get("version") not in (1, 2, 3, 4, 5, 6, 7):
        raise ValueError(f"{tree_dir}/cairn-tree.json: not a cairn tree of version 1 to 7")
    if index["version"] >= 4:
        with open(os.path.join(tree_dir, "cairn-tree.bin"), "rb") as f:
            binary = f.read()
        if binary[:8] != b"CAIRNTRB":
            raise ValueError(f"{tree_dir}/cairn-tree.bin: not the binary part of a cairn index")
        for leaf in index["leaves"]:
            if leaf["kind"] == "array":
                leaf["shards"] = _shards_v4(leaf, index["files"], binary)
    return index["leaves"]


def read_leaf(tree_dir, leaf):
    """One leaf of read_index(): an array leaf's global array, or a value leaf's value."""
    return read_array(tree_dir, leaf) if leaf["kind"] == "array" else _value(leaf)


def read_tree(tree_dir):
    """Every leaf of the array tree in `tree_dir`: {path: ndarray or value}. Raises ValueError
    naming the first compressed leaf, if any (read the others with read_index and read_leaf)."""
    return {leaf["path"]: read_leaf(tree_dir, leaf) for leaf in read_index(tree_dir)}


def _items(path):
    """(name, handler type, tree directory or JSON value) of every item of the committed
    checkpoint at `path`."""
    if not os.path.exists(os.path.join(path, "COMMITTED")):
        raise ValueError(f"{path}: no COMMITTED marker, not a committed checkpoint")
    with open(os.path.join(path, "cairn-step.json")) as f:
        step = json.load(f)
    if step["handler"] == "cairn.array_tree":
        return [("", "cairn.array_tree", path)]
    items = []
    for name, kind in sorted(step.get("items", {}).items()):
        item_dir = os.path.join(path, name)
        if kind == "cairn.array_tree":
            items.append((name, kind, item_dir))
        elif kind == "cairn.json":
            with open(os.path.join(item_dir, "value.json")) as f:
                items.append((name, kind, json.load(f)))
    return items


def read_checkpoint(path):
    """The items of a committed checkpoint: {item: {path: value}} for a composite checkpoint
    (JSON items as their value; bytes items are left out), {path: value} for one saved with
    a single tree handler. Raises ValueError naming a compressed leaf."""
    items = [(name, read_tree(value) if kind == "cairn.array_tree" else value)
             for name, kind, value in _items(path)]
    if len(items) == 1 and items[0][0] == "":
        return items[0][1]
    return dict(items)


def _describe(tree_dir, leaf):
    """A listing line's description of a leaf, read only when it is a value."""
    if leaf["kind"] != "array":
        return repr(_value(leaf))
    shape = tuple(leaf["shape"])
    if leaf.get("format") != "posix" or _compression(leaf) != "none":
        how = _compression(leaf) + "-compressed" if leaf.get("format") == "posix" else "hdf5"
        return f"{leaf['dtype']} {shape} ({how}: not read here)"
    return f"{_result_dtype(leaf['dtype'])} {shape}"


def _main(argv):
    if len(argv) not in (2, 3):
        print(__doc__.split("\n\n")[0], file=sys.stderr)
        print("usage: cairn_posix_reader.py CHECKPOINT [ITEM/LEAF]", file=sys.stderr)
        return 2
    flat = {}  # listed name -> (tree directory, leaf) or (None, JSON value)
    try:
        for name, kind, value in _items(argv[1]):
            if kind == "cairn.array_tree":
                flat.update({(f"{name}/" if name else "") + leaf["path"]: (value, leaf)
                             for leaf in read_index(value)})
            else:
                flat[name] = (None, value)
    except (ValueError, OSError) as e:
        print(f"cairn_posix_reader.py: {e}", file=sys.stderr)
        return 2
    try:
        if len(argv) == 3:
            if argv[2] not in flat:
                print(f"cairn_posix_reader.py: {argv[1]} has no leaf '{argv[2]}' "
                      f"(its leaves: {', '.join(flat) or 'none'})", file=sys.stderr)
                return 2
            tree_dir, leaf = flat[argv[2]]
            numpy.set_printoptions(threshold=sys.maxsize)
            print(leaf if tree_dir is None else read_leaf(tree_dir, leaf))
            return 0
    except ValueError as e:
        print(f"cairn_posix_reader.py: {e}", file=sys.stderr)
        return 1
    for name, (tree_dir, leaf) in flat.items():
        print(f"{name}: {repr(leaf) if tree_dir is None else _describe(tree_dir, leaf)}")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv))
