#include "agent/inventory.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <memory>

namespace hg::agent {
namespace {

// The slice of NVML's C API used here (nvml.h is not installed on machines without the driver,
// so the two signatures are declared by hand; both are stable since CUDA 5).
using NvmlInitFn = int (*)();
using NvmlCountFn = int (*)(unsigned int*);
using NvmlShutdownFn = int (*)();

struct DlCloser {
  void operator()(void* h) const {
    if (h != nullptr) dlclose(h);
  }
};

}  // namespace

bool ValidName(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
          c == '_' || c == '-'))
      return false;
  return true;
}

std::optional<int> NvmlGpuCount(const std::string& library, std::string* why) {
  auto set_why = [&](std::string w) {
    if (why != nullptr) *why = std::move(w);
  };
  std::unique_ptr<void, DlCloser> lib(dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (!lib) {
    const char* e = dlerror();
    set_why(fmt::format("{} not loaded: {}", library, e != nullptr ? e : "unknown error"));
    return std::nullopt;
  }
  auto init = reinterpret_cast<NvmlInitFn>(dlsym(lib.get(), "nvmlInit_v2"));
  auto count = reinterpret_cast<NvmlCountFn>(dlsym(lib.get(), "nvmlDeviceGetCount_v2"));
  auto shutdown = reinterpret_cast<NvmlShutdownFn>(dlsym(lib.get(), "nvmlShutdown"));
  if (init == nullptr || count == nullptr) {
    set_why(fmt::format("{} lacks nvmlInit_v2/nvmlDeviceGetCount_v2", library));
    return std::nullopt;
  }
  if (const int rc = init(); rc != 0) {
    set_why(fmt::format("nvmlInit_v2 failed with code {}", rc));
    return std::nullopt;
  }
  unsigned int n = 0;
  const int rc = count(&n);
  if (shutdown != nullptr) shutdown();
  if (rc != 0) {
    set_why(fmt::format("nvmlDeviceGetCount_v2 failed with code {}", rc));
    return std::nullopt;
  }
  return static_cast<int>(n);
}

Result<Inventory> DetectInventory(const InventoryOptions& opt) {
  Inventory inv;
  for (const std::string& kv : opt.labels) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) return Fail("--label", "'" + kv + "' is not k=v");
    const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (!ValidName(k)) return Fail("--label", "key '" + k + "' is not [A-Za-z0-9._-]{1,64}");
    if (!ValidName(v)) return Fail("--label", "value '" + v + "' is not [A-Za-z0-9._-]{1,64}");
    if (inv.labels.count(k) != 0) return Fail("--label", "key '" + k + "' given twice");
    inv.labels[k] = v;
  }
  if (!opt.block.empty()) {
    if (!ValidName(opt.block))
      return Fail("--block", "'" + opt.block + "' is not [A-Za-z0-9._-]{1,64}");
    if (inv.labels.count("block") != 0 && inv.labels["block"] != opt.block)
      return Fail("--block", "conflicts with --label block=" + inv.labels["block"]);
    inv.labels["block"] = opt.block;
  }
  if (opt.virtual_gpus < -1 || opt.virtual_gpus > 1024)
    return Fail("--gpus", "must be between 0 and 1024");
  if (opt.gpu_source != "auto" && opt.gpu_source != "nvml" && opt.gpu_source != "virtual")
    return Fail("--gpu-source", "must be auto, nvml or virtual");
  if (opt.gpu_source != "virtual") {
    std::string why;
    if (auto n = NvmlGpuCount(opt.nvml_library, &why)) {
      inv.gpus = *n;
      inv.gpu_source = "nvml";
      return inv;
    }
    if (opt.gpu_source == "nvml") return Fail("--gpu-source", "nvml: " + why);
  }
  if (opt.virtual_gpus < 0)
    return Fail("--gpus", "no NVML library on this machine; give --gpus N (virtual GPUs)");
  inv.gpus = opt.virtual_gpus;
  inv.gpu_source = "virtual";
  return inv;
}

}  // namespace hg::agent
