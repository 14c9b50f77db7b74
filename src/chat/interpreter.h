#pragma once
#include <string>

#include "chat/ast.h"

namespace flashdraft::chat {

// Renders a parsed template against a context object (the template's global
// variables). Runtime errors read "chat template line N: ..."; the message of
// raise_exception() passes through unchanged.
std::string render_template(const Body& body, const Json& context);

}  // namespace flashdraft::chat
