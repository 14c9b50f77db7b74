#pragma once
#include <string>

#include "chat/ast.h"

namespace flashdraft::chat {

// Parses a template; throws flashdraft::Error "chat template line N: ..." for
// syntax errors and for constructs the interpreter does not implement.
Body parse_template(const std::string& source);

}  // namespace flashdraft::chat
