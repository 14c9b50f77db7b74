// Templates using constructs the engine does not implement must fail when
// they are parsed, naming the construct and its line.
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "chat/chat_template.h"
#include "core/error.h"

namespace flashdraft::chat {
namespace {

std::string parse_error(const std::string& source) {
  try {
    ChatTemplate::parse(source);
  } catch (const Error& e) {
    return e.what();
  }
  return "<parsed without error>";
}

struct Rejected {
  const char* source;
  const char* message;  // expected what()
};

void PrintTo(const Rejected& r, std::ostream* os) { *os << ::testing::PrintToString(std::string(r.source)); }

class Unsupported : public ::testing::TestWithParam<Rejected> {};

TEST_P(Unsupported, FailsAtParseNamingConstructAndLine) {
  EXPECT_EQ(parse_error(GetParam().source), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Constructs, Unsupported,
    ::testing::Values(
        Rejected{"a\n\n{{ x | wordwrap }}", "chat template line 3: unsupported filter 'wordwrap'"},
        Rejected{"{{ 'abc'|truncate(2) }}", "chat template line 1: unsupported filter 'truncate'"},
        Rejected{"{{ x|forceescape }}", "chat template line 1: unsupported filter 'forceescape'"},
        Rejected{"{% macro m() %}x{% endmacro %}\n{% call m() %}y{% endcall %}", "chat template line 2: unsupported tag 'call'"},
        Rejected{"{% macro m() %}{{ caller() }}{% endmacro %}", "chat template line 1: unsupported function 'caller'"},
        Rejected{"{% macro a() %}{% endmacro %}\n{{ a() }}{{ b() }}", "chat template line 2: unsupported function 'b'"},
        Rejected{"x\n{% include 'other.j2' %}", "chat template line 2: unsupported tag 'include'"},
        Rejected{"{% extends 'base.j2' %}", "chat template line 1: unsupported tag 'extends'"},
        Rejected{"{% filter upper %}x{% endfilter %}", "chat template line 1: unsupported tag 'filter'"},
        Rejected{"{% with a = 1 %}{{ a }}{% endwith %}", "chat template line 1: unsupported tag 'with'"},
        Rejected{"\n\n\n  {% raw %}{{ x }}{% endraw %}", "chat template line 4: unsupported tag 'raw'"},
        Rejected{"{% do items.append(1) %}", "chat template line 1: unsupported tag 'do'"},
        Rejected{"{% if x is escaped %}{% endif %}", "chat template line 1: unsupported test 'escaped'"},
        Rejected{"{{ '{}'.format(1) }}", "chat template line 1: unsupported method 'format'"},
        Rejected{"{{ messages.append(1) }}", "chat template line 1: unsupported method 'append'"},
        Rejected{"{{ lipsum(2) }}", "chat template line 1: unsupported function 'lipsum'"},
        Rejected{"{% for m in messages %}\n{{ loop.changed(m) }}{% endfor %}",
                 "chat template line 2: unsupported loop attribute 'loop.changed'"},
        Rejected{"{% for m in messages recursive %}{% endfor %}", "chat template line 1: unsupported recursive for loop"},
        Rejected{"{{ range(*args) }}", "chat template line 1: unsupported '*args' / '**kwargs' in a call"},
        Rejected{"{% set x | upper %}a{% endset %}", "chat template line 1: unsupported filter on a '{% set %}' block"}),
    [](const auto& info) { return "case" + std::to_string(info.index); });

class SyntaxErrors : public ::testing::TestWithParam<Rejected> {};

TEST_P(SyntaxErrors, FailAtParseWithLine) { EXPECT_EQ(parse_error(GetParam().source), GetParam().message); }

INSTANTIATE_TEST_SUITE_P(
    Templates, SyntaxErrors,
    ::testing::Values(
        Rejected{"x\n{% if a %}y", "chat template line 2: 'if' opened here is never closed (expected '{% endif %}')"},
        Rejected{"{% for a in b %}\n{% endif %}", "chat template line 2: unexpected '{% endif %}'"},
        Rejected{"{{ x ", "chat template line 1: unclosed tag, expected '}}'"},
        Rejected{"a\n{# never closed", "chat template line 2: missing end of comment tag '#}'"},
        Rejected{"{{ (1 }}", "chat template line 1: unexpected '}', expected ')'"},
        Rejected{"{% break %}", "chat template line 1: 'break' outside of a for loop"},
        Rejected{"{{ 'abc }}", "chat template line 1: unterminated string literal"},
        Rejected{"{{ a b }}", "chat template line 1: expected '}}', got 'b'"},
        Rejected{"{% set = 1 %}", "chat template line 1: expected a name, got '='"},
        Rejected{"{{ 1 + }}", "chat template line 1: unexpected end of print statement"},
        Rejected{"{% endfor %}", "chat template line 1: unexpected '{% endfor %}'"},
        Rejected{"{% frobnicate %}", "chat template line 1: unsupported tag 'frobnicate'"}),
    [](const auto& info) { return "case" + std::to_string(info.index); });

}  // namespace
}  // namespace flashdraft::chat
