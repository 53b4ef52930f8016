// One way every subcommand reads its command line (`gpulaunch X ...`):
// Boost.ProgramOptions over the options the subcommand describes, so that
// every subcommand has the same --help layout (usage, what it does, the
// options table), the same errors ("X: unknown option '--y'; see 'gpulaunch
// X --help'", a missing or malformed value named with its option), and exit
// code 2 for all of them (they are InvalidArgument; Fail() maps them).
#pragma once

#include <boost/program_options.hpp>

#include <string>
#include <vector>

#include "common/status.h"

namespace gpulaunch {

class SubcommandParser {
 public:
  // `name`: the subcommand ("nodes"); `usage`: the synopsis after
  // "usage: gpulaunch NAME"; `about`: what it does, printed under the usage.
  SubcommandParser(std::string name, std::string usage, std::string about);

  // Adds options, as options_description::add_options() does. -h/--help is
  // already there.
  boost::program_options::options_description_easy_init Add() { return options_.add_options(); }

  // Parses `args` (after the subcommand's name). No positional arguments are
  // taken: any word that is not an option is an error naming it.
  StatusOr<boost::program_options::variables_map> Parse(const std::vector<std::string>& args) const;

  // True when the parsed line asked for --help.
  static bool WantsHelp(const boost::program_options::variables_map& vm) { return vm.count("help") > 0; }

  // For commands that stop at the first word that is not theirs (submit):
  // how many of the following words `token` takes if it is one of this
  // parser's options ("--time", "--time=5", "-N", "-N4"): 1 when its value is
  // the next word, 0 when it has none or carries it; -1 when it is not one.
  int WordsAfter(const std::string& token) const;

  std::string Help() const;
  const std::string& name() const { return name_; }

  // A usage error of this subcommand: "NAME: <what>".
  Status Error(const std::string& what) const { return InvalidArgument(name_ + ": " + what); }

 private:
  std::string name_, usage_, about_;
  boost::program_options::options_description options_;
};

// The value of an integer option within [lo, hi], else a usage error naming
// the option, the value and the range ("nodes: --budget 0: give seconds from
// 1 to 86400"). `fallback` when the option is absent.
StatusOr<int> IntOption(const SubcommandParser& parser, const boost::program_options::variables_map& vm,
                        const char* name, int fallback, int lo, int hi, const char* unit);

// --format: table or json (`fallback` when absent).
StatusOr<std::string> FormatOption(const SubcommandParser& parser, const boost::program_options::variables_map& vm,
                                   const std::string& fallback = "table");

// What was wrong with a command line that Boost refused, in the words every
// gpulaunch command uses ("unknown option '--x'", "--budget needs a value",
// ...), without the "; see 'gpulaunch X --help'" that the caller adds.
// Boost fills %placeholders% into its own messages and never stops when the
// user's text holds one (`--np %value%` hangs in what()), so with a '%' in
// `args` the message is ours.
std::string OptionErrorText(const boost::program_options::error& e, const std::vector<std::string>& args);

}  // namespace gpulaunch
