// cairn (the command-line tool) — the one JSON document a `--json` run prints on stdout,
// written piece by piece (so that `dump` can stream large arrays), and ended with an
// "error" member when the command fails midway: every `--json` run prints valid JSON.
#pragma once

#include <boost/json/value.hpp>

#include <string_view>
#include <vector>

namespace cairn_tool {

/// A JSON document written to stdout as it is built. It tracks the arrays and objects it has
/// opened, so that fail() can close them and the output stays one valid document whatever
/// the point of failure. Used on the primary rank of a `--json` run; disabled (every call
/// does nothing), it serves the other ranks and the text output. Not thread-safe.
class JsonStream {
 public:
  /// Whether this stream writes (the primary rank of a `--json` run).
  void enable(bool on) { enabled_ = on; }
  [[nodiscard]] bool enabled() const { return enabled_; }

  void begin_object() { open(true); }
  void begin_array() { open(false); }
  /// Closes the innermost open object or array. Throws std::logic_error when it is not of
  /// that kind (a bug in the command).
  void end_object() { close(true); }
  void end_array() { close(false); }
  /// The name of the next member of the innermost object.
  void key(std::string_view name);
  /// A whole value: an array element, the value of the last key, or the whole document.
  void value(const boost::json::value& v);
  /// A line break between tokens, for people who read the output (JSON allows whitespace).
  void line_break();
  /// Prints `v` indented as the whole document, with a final newline.
  void document(const boost::json::value& v);

  /// Ends the document with an "error" member {"command", "message", "exit_code"}: closes
  /// every array and object opened since the outermost object (a key without its value
  /// gets null) and adds the member there; a failure before anything was printed prints
  /// {"error": {...}} alone. Does nothing when the document is already complete or the
  /// stream is disabled. Never throws beyond std::bad_alloc.
  void fail(std::string_view command, std::string_view message, int exit_code);

 private:
  struct Level {
    bool object = false;
    bool empty = true;         ///< nothing written in it yet
    bool key_pending = false;  ///< a key was written, its value not yet
  };
  void open(bool object);   // an object or an array, as a value
  void close(bool object);  // the innermost, which must be of that kind
  void before_value();      // the comma before an element or member, if one is due
  void write(std::string_view text);

  bool enabled_ = false;
  bool started_ = false;
  bool complete_ = false;
  std::vector<Level> open_;
};

}  // namespace cairn_tool
