// The trace adapters: Philly, generic CSV/JSONL with a column mapping, and openb. The first byte
// picks the adapter. A refusal names the file; an accepted trace becomes a scenario the simulator
// accepts as it is (sim::Validate): an adapter must never hand the engine a job that cannot fit,
// a budget that does not exist or a broken tree.
//   generic: the first line is the --map spec, the rest the trace.
//   openb:   the nodes CSV, a line "---", then the pods CSV.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "core/policy.h"
#include "fuzz/fuzz_check.h"
#include "sim/engine.h"
#include "sim/generic_trace.h"
#include "sim/openb.h"
#include "sim/philly.h"

namespace {

void MustRun(const hg::Result<hg::sim::Scenario>& sc) {
  if (!sc) {
    FUZZ_CHECK(!sc.error().reason.empty());  // every refusal says why
    return;
  }
  auto ok = hg::sim::Validate(*sc, hg::PolicyConfig{});
  if (!ok) std::fprintf(stderr, "adapter output refused: %s\n", ok.error().ToString().c_str());
  FUZZ_CHECK(ok.has_value());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0: {
      hg::sim::PhillyOptions opt;
      opt.unfunded_fraction = 0.2;
      MustRun(hg::sim::ParsePhilly(text, "philly.csv", opt));
      break;
    }
    case 1:
    case 2: {
      const size_t nl = text.find('\n');
      hg::sim::GenericOptions opt;
      opt.map = std::string(text.substr(0, nl));
      opt.jsonl = data[0] % 4 == 2;
      const std::string_view body = nl == std::string_view::npos ? "" : text.substr(nl + 1);
      MustRun(hg::sim::ParseGenericTrace(body, "trace", opt));
      break;
    }
    default: {
      const size_t cut = text.find("\n---\n");
      if (cut == std::string_view::npos) break;
      MustRun(hg::sim::ParseOpenb(text.substr(0, cut + 1), "nodes.csv", text.substr(cut + 5),
                                  "pods.csv", hg::sim::OpenbOptions{}));
      break;
    }
  }
  return 0;
}
