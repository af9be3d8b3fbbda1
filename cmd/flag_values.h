// Hourglass's errors are one line that names the command, the flag and the reason; CLI11 words its
// own for programmers ("Could not convert: --seed = abc", then a second line), and accepts some
// values it should not: `--seed -1` or `--seed 99999999999999999999` become 2^64 - 1, and
// `--jobs 010` is read as octal 8. These functions put every flag's value through one check
// first and give CLI11's errors Hourglass's shape.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace hg::cmd {

// Adds to every option of `app` and its subcommands whose value is a number or a bool a check
// that refuses, naming the value and what the flag takes: a whole number that is not plain
// decimal digits (with a sign where negative values are allowed) or lies outside 64 bits, a
// number that is not one, a bool that is not true or false (1/0, yes/no, on/off also). A whole
// number is passed on in canonical form, so leading zeros do not make it octal.
void CheckFlagValues(CLI::App& app);

// The one line to print for a parse error of `top` (the flags' app, its subcommands parsed as far
// as they got): "hourglass sim: --seed: '-1' is not a whole number >= 0". `command` is the name
// to print for `top` itself ("hourglass").
std::string ParseErrorLine(const CLI::App& top, const std::string& command,
                           const CLI::ParseError& e);

// The same without the command: "--seed: '-1' is not a whole number >= 0".
std::string ParseErrorReason(const CLI::App& top, const CLI::ParseError& e);

}  // namespace hg::cmd
