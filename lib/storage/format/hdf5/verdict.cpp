#include "storage/format/hdf5/verdict.hpp"

#include <cairn/error.hpp>

#include <exception>
#include <string>
#include <utility>

namespace cairn::storage::h5 {

std::vector<std::byte> primary_verdict(const Comm& comm,
                                       const std::function<void(base::Packed& out)>& find) {
  // First byte: 0 for the primary's bytes, 1 for an error (code, path, field, message).
  base::Packed verdict;
  if (comm.is_primary()) {
    try {
      base::Packed found;
      find(found);
      verdict.put_byte(0);
      auto& bytes = verdict.bytes();
      bytes.insert(bytes.end(), found.bytes().begin(), found.bytes().end());
    } catch (const std::exception& e) {
      std::string path;
      std::string field;
      if (const auto* f = dynamic_cast<const FormatError*>(&e)) {
        path = f->path();
        field = f->field();
      } else if (const auto* n = dynamic_cast<const NotFound*>(&e)) {
        path = n->what_missing();
      } else if (const auto* io = dynamic_cast<const IoError*>(&e)) {
        path = io->path();
      }
      verdict = base::Packed();
      verdict.put_byte(1);
      verdict.put(static_cast<std::uint64_t>(error_code_of(e)));
      verdict.put(path);
      verdict.put(field);
      verdict.put(std::string_view(e.what()));
    }
  }
  std::vector<std::byte> received = comm.broadcast_bytes(verdict.bytes());
  base::Unpacked in(received);
  if (in.take_byte() == 0) {
    received.erase(received.begin());
    return received;
  }
  const auto code = static_cast<ErrorCode>(in.take());
  std::string path = in.take_text();
  std::string field = in.take_text();
  std::string message = in.take_text();
  switch (code) {
    case ErrorCode::format:
      throw FormatError(std::move(path), std::move(field), std::move(message));
    case ErrorCode::not_found: throw NotFound(std::move(path), std::move(message));
    case ErrorCode::io: throw IoError(std::move(path), std::move(message));
    default: throw_error(code, std::move(message));
  }
}

}  // namespace cairn::storage::h5
