// Errors a user can cause are values: where (file, line, field) and why.
#pragma once

#include <string>
#include <tl/expected.hpp>

namespace hg {

struct Error {
  std::string field;   // the offending field, e.g. "min_runtime" or "budget.share"
  std::string reason;  // why it is refused, in words a user understands
  std::string file;    // set by readers of files
  int line = 0;        // 1-based; 0 when not from a file

  // "file:line: field: reason" with the parts that are known.
  std::string ToString() const;
};

template <class T>
using Result = tl::expected<T, Error>;

inline tl::unexpected<Error> Fail(std::string field, std::string reason) {
  return tl::unexpected<Error>(Error{std::move(field), std::move(reason), {}, 0});
}

}  // namespace hg
