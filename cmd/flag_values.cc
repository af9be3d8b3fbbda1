#include "cmd/flag_values.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <string_view>
#include <system_error>
#include <vector>

namespace hg::cmd {
namespace {

// CLI11's name for the type an option converts to, without the descriptions its validators add
// ("INT:INT in [1 - 1024]" is an INT).
std::string TypeOf(const CLI::Option& opt) {
  const std::string full = opt.get_type_name();
  return full.substr(0, full.find(':'));
}

std::string Quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

template <typename T>
std::string WholeNumber(std::string& text) {
  std::string_view s = text;
  if (s.size() > 1 && s.front() == '+') s.remove_prefix(1);
  T value{};
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec == std::errc::result_out_of_range) return Quoted(text) + " is out of range";
  if (ec != std::errc() || end != s.data() + s.size() || s.empty())
    return Quoted(text) +
           (std::is_signed_v<T> ? " is not a whole number" : " is not a whole number >= 0");
  text = std::to_string(value);  // CLI11 reads a leading 0 as octal, 0x as hex
  return {};
}

std::string Number(std::string& text) {
  double value = 0;
  const char* b = text.data();
  const char* e = b + text.size();
  if (b != e && *b == '+') ++b;
  const auto [end, ec] = std::from_chars(b, e, value);
  if (ec == std::errc::result_out_of_range) return Quoted(text) + " is out of range";
  if (ec != std::errc() || end != e || b == e) return Quoted(text) + " is not a number";
  return {};
}

std::string Bool(std::string& text) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* yes : {"true", "1", "yes", "on"})
    if (lower == yes) return text = "true", std::string();
  for (const char* no : {"false", "0", "no", "off"})
    if (lower == no) return text = "false", std::string();
  return Quoted(text) + " is not true or false";
}

void CheckOptions(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    if (opt->get_items_expected_min() == 0) continue;  // a flag without a value
    const std::string type = TypeOf(*opt);
    // First of its validators (transform puts it there), so a range check sees a clean number;
    // an empty description keeps `--help` as it is.
    if (type == "INT") opt->transform(CLI::Validator(WholeNumber<int64_t>, ""));
    if (type == "UINT") opt->transform(CLI::Validator(WholeNumber<uint64_t>, ""));
    if (type == "FLOAT") opt->transform(CLI::Validator(Number, ""));
    if (type == "BOOLEAN") opt->transform(CLI::Validator(Bool, ""));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) CheckOptions(*sub);
}

// The subcommand the parse got to: the last one parsed at each level.
const CLI::App* Deepest(const CLI::App& top) {
  const CLI::App* app = &top;
  for (auto subs = app->get_subcommands(); !subs.empty(); subs = app->get_subcommands())
    app = subs.back();
  return app;
}

const CLI::Option* FindOption(const CLI::App* app, const std::string& name) {
  for (; app != nullptr; app = app->get_parent())
    if (const CLI::Option* opt = app->get_option_no_throw(name)) return opt;
  return nullptr;
}

// A value that passed CheckFlagValues and still failed CLI11's conversion did not fit the
// option's narrower type (a 32-bit count, say); anything else is the option's own format.
std::string Unconverted(const CLI::App* app, const std::string& name, const std::string& value) {
  const CLI::Option* opt = FindOption(app, name);
  const std::string type = opt != nullptr ? TypeOf(*opt) : "";
  if (type == "INT" || type == "UINT") return Quoted(value) + " is out of range";
  if (type == "BOOLEAN") return Quoted(value) + " is not true or false";
  return Quoted(value) + " is not a valid value";
}

}  // namespace

void CheckFlagValues(CLI::App& app) { CheckOptions(app); }

std::string ParseErrorReason(const CLI::App& top, const CLI::ParseError& e) {
  const CLI::App* app = Deepest(top);
  std::string what = e.what();  // not const: returned as is, moved
  static constexpr std::string_view kUnconverted = "Could not convert: ";
  if (what.starts_with(kUnconverted)) {
    const std::string rest = what.substr(kUnconverted.size());
    const auto eq = rest.find(" = ");
    if (eq != std::string::npos) {
      const std::string name = rest.substr(0, eq);
      return name + ": " + Unconverted(app, name, rest.substr(eq + 3));
    }
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    // CLI11 lists them last first; the user typed them the other way round.
    std::string words;
    for (const std::string& w : app->remaining()) words += (words.empty() ? "" : " ") + w;
    if (!words.empty()) return "not a flag or argument of this command: " + words;
  }
  if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && app == &top &&
      top.get_require_subcommand_min() > 0)
    return top.remaining().empty() ? "a command is required"
                                   : "unknown command " + Quoted(top.remaining().front());
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr) {
    // "--seed: 1 required UINT missing", "--seed: At Most 1 required but received 2"
    const std::string name = what.substr(0, what.find(':'));
    if (what.ends_with(" missing")) return name + ": needs a value";
    if (what.find("At Most 1 required") != std::string::npos)
      return name + ": given more than once";
  }
  return what;
}

std::string ParseErrorLine(const CLI::App& top, const std::string& command,
                           const CLI::ParseError& e) {
  std::string path;
  for (const CLI::App* app = Deepest(top); app != &top; app = app->get_parent())
    path = " " + app->get_name() + path;
  path = command + path;
  std::string line = path + ": " + ParseErrorReason(top, e);
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr ||
      dynamic_cast<const CLI::RequiredError*>(&e) != nullptr)
    line += " (`" + path + " --help` lists what it takes)";
  return line;
}

}  // namespace hg::cmd
