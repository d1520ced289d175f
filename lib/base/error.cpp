#include <cairn/error.hpp>

#include <utility>

namespace cairn {

std::string_view to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::invalid_argument: return "invalid argument";
    case ErrorCode::io: return "I/O error";
    case ErrorCode::format: return "format error";
    case ErrorCode::collective_mismatch: return "collective mismatch";
    case ErrorCode::timeout: return "timeout";
    case ErrorCode::not_found: return "not found";
    case ErrorCode::unsupported: return "unsupported";
    case ErrorCode::internal: return "internal error";
  }
  return "unknown error";
}

Error::Error(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

InvalidArgument::InvalidArgument(std::string message)
    : Error(ErrorCode::invalid_argument, std::move(message)) {}

IoError::IoError(std::string path, std::string message)
    : Error(ErrorCode::io, std::move(message)), path_(std::move(path)) {}

FormatError::FormatError(std::string path, std::string field, std::string message)
    : Error(ErrorCode::format, std::move(message)),
      path_(std::move(path)),
      field_(std::move(field)) {}

CollectiveMismatch::CollectiveMismatch(int rank, std::string field, std::string message)
    : Error(ErrorCode::collective_mismatch, std::move(message)),
      rank_(rank),
      field_(std::move(field)) {}

TimeoutError::TimeoutError(std::vector<int> missing_ranks, std::string message)
    : Error(ErrorCode::timeout, std::move(message)), missing_(std::move(missing_ranks)) {}

NotFound::NotFound(std::string what, std::string message)
    : Error(ErrorCode::not_found, std::move(message)), what_(std::move(what)) {}

Unsupported::Unsupported(std::string message) : Error(ErrorCode::unsupported, std::move(message)) {}

void throw_error(ErrorCode code, std::string message) {
  switch (code) {
    case ErrorCode::invalid_argument: throw InvalidArgument(std::move(message));
    case ErrorCode::io: throw IoError("", std::move(message));
    case ErrorCode::format: throw FormatError("", "", std::move(message));
    case ErrorCode::collective_mismatch: throw CollectiveMismatch(-1, "", std::move(message));
    case ErrorCode::timeout: throw TimeoutError({}, std::move(message));
    case ErrorCode::not_found: throw NotFound("", std::move(message));
    case ErrorCode::unsupported: throw Unsupported(std::move(message));
    case ErrorCode::internal: break;
  }
  throw Error(ErrorCode::internal, std::move(message));
}

ErrorCode error_code_of(const std::exception& e) noexcept {
  if (const auto* error = dynamic_cast<const Error*>(&e)) return error->code();
  return ErrorCode::internal;
}

}  // namespace cairn
