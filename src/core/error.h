#pragma once
// Errors that cross layer boundaries. Messages are written for the user:
// they name the file / tensor / flag involved and say what was expected.
#include <stdexcept>
#include <string>

namespace flashdraft {

// Anything wrong with inputs we were given (files, configs, requests).
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad command-line usage: the CLI prints one line and exits with code 2.
class UsageError : public Error {
 public:
  using Error::Error;
};

}  // namespace flashdraft
