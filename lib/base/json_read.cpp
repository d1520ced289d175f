#include "base/json_read.hpp"

#include <boost/json/parse.hpp>
#include <cairn/error.hpp>
#include <fmt/format.h>

namespace cairn::base {

boost::json::value parse_json(std::string_view text, const std::filesystem::path& source,
                              JsonLimits limits) {
  if (text.size() > limits.max_bytes) {
    throw FormatError(source.string(), "json",
                      fmt::format("{} holds {} bytes, more than the {} a metadata file may hold; "
                                  "the file is damaged",
                                  source.string(), text.size(), limits.max_bytes));
  }
  boost::system::error_code ec;
  boost::json::parse_options options;
  options.max_depth = limits.max_depth;
  boost::json::value value = boost::json::parse(text, ec, {}, options);
  if (ec) {
    throw FormatError(source.string(), "json",
                      fmt::format("{} is not valid JSON ({}); the file is damaged or truncated",
                                  source.string(), ec.message()));
  }
  return value;
}

}  // namespace cairn::base
