#pragma once
// A request the server refuses, as OpenAI's API reports it: an HTTP status
// and a JSON body {"error": {"message", "type", "param", "code"}} that names
// the offending field in `param` when there is one.
#include <optional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace flashdraft::server {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string message, std::optional<std::string> param = std::nullopt,
           std::optional<std::string> code = std::nullopt);

  int status() const { return status_; }
  const std::optional<std::string>& param() const { return param_; }
  const std::optional<std::string>& code() const { return code_; }
  // OpenAI's error type for the status: invalid_request_error (4xx but the
  // ones below), authentication_error (401), not_found_error (404),
  // server_error (5xx).
  std::string type() const;
  nlohmann::json body() const;

 private:
  int status_;
  std::optional<std::string> param_, code_;
};

// 400 for field `param`: "<param>: <problem>".
ApiError invalid_field(const std::string& param, const std::string& problem);

}  // namespace flashdraft::server
