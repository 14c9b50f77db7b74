#pragma once
// Asserts that `fn` throws flashdraft::Error whose message contains every one
// of `parts` (file, tensor, expected and found values).
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "core/error.h"

namespace flashdraft::io::testing {

template <typename Fn>
void expect_error(Fn&& fn, std::initializer_list<std::string> parts) {
  try {
    fn();
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const std::string& part : parts) {
      EXPECT_NE(msg.find(part), std::string::npos) << "missing \"" << part << "\" in: " << msg;
    }
    return;
  }
  ADD_FAILURE() << "expected flashdraft::Error";
}

}  // namespace flashdraft::io::testing
