#include "json_stream.hpp"

#include <boost/json.hpp>

#include <cstdio>
#include <stdexcept>

#include "checkpoint_dir.hpp"

namespace cairn_tool {

void JsonStream::write(std::string_view text) { std::fwrite(text.data(), 1, text.size(), stdout); }

void JsonStream::before_value() {
  if (open_.empty()) {
    started_ = true;
    return;
  }
  Level& level = open_.back();
  if (level.object) {
    if (!level.key_pending) throw std::logic_error("JsonStream: a member value without a key");
    level.key_pending = false;
    return;
  }
  if (!level.empty) write(",");
  level.empty = false;
}

void JsonStream::open(bool object) {
  if (!enabled_) return;
  before_value();
  write(object ? "{" : "[");
  open_.push_back({.object = object});
}

void JsonStream::close(bool object) {
  if (!enabled_) return;
  if (open_.empty() || open_.back().object != object || open_.back().key_pending) {
    throw std::logic_error(object ? "JsonStream: end_object() without an open object"
                                  : "JsonStream: end_array() without an open array");
  }
  open_.pop_back();
  write(object ? "}" : "]");
  if (open_.empty()) {
    write("\n");
    complete_ = true;
  }
}

void JsonStream::key(std::string_view name) {
  if (!enabled_) return;
  if (open_.empty() || !open_.back().object || open_.back().key_pending) {
    throw std::logic_error("JsonStream: key() outside an object");
  }
  Level& level = open_.back();
  if (!level.empty) write(",");
  level.empty = false;
  level.key_pending = true;
  write(boost::json::serialize(boost::json::string(name)));
  write(":");
}

void JsonStream::value(const boost::json::value& v) {
  if (!enabled_) return;
  before_value();
  write(boost::json::serialize(v));
  if (open_.empty()) {
    write("\n");
    complete_ = true;
  }
}

void JsonStream::line_break() {
  if (enabled_) write("\n");
}

void JsonStream::document(const boost::json::value& v) {
  if (!enabled_) return;
  if (started_) throw std::logic_error("JsonStream: document() after the document began");
  started_ = true;
  write(pretty_json(v));
  write("\n");
  complete_ = true;
}

void JsonStream::fail(std::string_view command, std::string_view message, int exit_code) {
  if (!enabled_ || complete_) return;
  const boost::json::object error = {
      {"command", command}, {"message", message}, {"exit_code", exit_code}};
  if (!started_) {
    started_ = true;
    write(boost::json::serialize(boost::json::object{{"error", error}}));
    write("\n");
    complete_ = true;
    return;
  }
  // Close what is open down to the outermost level.
  while (open_.size() > 1) {
    if (open_.back().key_pending) write("null");
    write(open_.back().object ? "}" : "]");
    open_.pop_back();
  }
  Level& outer = open_.back();
  if (outer.key_pending) write("null");
  if (!outer.empty) write(",");
  if (outer.object) {
    write("\n\"error\":");
    write(boost::json::serialize(error));
    write("}\n");
  } else {
    write(boost::json::serialize(boost::json::object{{"error", error}}));
    write("]\n");
  }
  open_.clear();
  complete_ = true;
  std::fflush(stdout);
}

}  // namespace cairn_tool
