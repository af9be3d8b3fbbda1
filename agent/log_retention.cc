#include "agent/log_retention.h"

#include <sys/stat.h>

#include <charconv>
#include <filesystem>
#include <optional>
#include <utility>

namespace hg::agent {
namespace {

namespace fs = std::filesystem;

std::optional<int64_t> Number(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

// (job, attempt) of a log file's name "<job>.<attempt>.<stdout|stderr>"; nullopt for others.
std::optional<std::pair<int64_t, int64_t>> LogOf(const std::string& name) {
  const size_t a = name.find('.');
  if (a == std::string::npos) return std::nullopt;
  const size_t b = name.find('.', a + 1);
  if (b == std::string::npos) return std::nullopt;
  const std::string_view stream(name.data() + b + 1, name.size() - b - 1);
  if (stream != "stdout" && stream != "stderr") return std::nullopt;
  const auto job = Number(std::string_view(name.data(), a));
  const auto attempt = Number(std::string_view(name.data() + a + 1, b - a - 1));
  if (!job || !attempt) return std::nullopt;
  return std::make_pair(*job, *attempt);
}

}  // namespace

PruneResult PruneLogs(const std::string& log_dir, int64_t now_ms, int64_t keep_ms,
                      const std::function<bool(int64_t job, int64_t attempt)>& running) {
  PruneResult out;
  std::error_code ec;
  for (fs::directory_iterator it(log_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const auto log = LogOf(it->path().filename().string());
    if (!log || running(log->first, log->second)) continue;
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    const int64_t written_ms =
        static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
    if (written_ms >= now_ms - keep_ms) continue;
    std::error_code rm;
    if (fs::remove(it->path(), rm)) {
      ++out.files;
      out.bytes += static_cast<int64_t>(st.st_size);
    }
  }
  return out;
}

}  // namespace hg::agent
