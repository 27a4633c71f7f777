#pragma once
// Subcommands register themselves (name, summary, Boost.Program_options description, run function) from their own
// file, so adding a command never touches main.cpp:
//   static const replayssm::cli::Registrar reg{{"reference", "FP64 outputs of an activation dump", add_opts, run}};
#include <boost/program_options.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace replayssm::cli {

namespace po = boost::program_options;

struct Command {
  std::string name;
  std::string summary;
  std::function<void(po::options_description&)> add_options;
  std::function<int(const po::variables_map&)> run;
  std::string example = "";     // shown at the end of `replayssm <name> --help`
  std::string positional = "";  // option that takes the bare arguments, if any (e.g. merge's "inputs")
};

struct Registrar {
  explicit Registrar(Command c);
};

const std::map<std::string, Command>& commands();

// Every option as the command resolved it (defaults included), as strings, for the output file's attributes.
std::map<std::string, std::string> resolved_options(const po::variables_map& vm);

// Checks what Boost accepts but no option means: a negative value for an unsigned option (Boost wraps "-1" to
// 2^64 - 1) and a non-finite value for a floating-point one. UserError "--<name>: ..." (exit 2).
void check_option_values(const po::parsed_options& parsed, const po::variables_map& vm);

// The exact command line, for provenance.
const std::string& command_line();

}  // namespace replayssm::cli
