#include "server/api_error.h"

namespace flashdraft::server {

ApiError::ApiError(int status, std::string message, std::optional<std::string> param, std::optional<std::string> code)
    : std::runtime_error(std::move(message)), status_(status), param_(std::move(param)), code_(std::move(code)) {}

std::string ApiError::type() const {
  if (status_ == 401) return "authentication_error";
  if (status_ == 404) return "not_found_error";
  if (status_ >= 500) return "server_error";
  return "invalid_request_error";
}

nlohmann::json ApiError::body() const {
  nlohmann::json error = {{"message", what()}, {"type", type()}, {"param", nullptr}, {"code", nullptr}};
  if (param_) error["param"] = *param_;
  if (code_) error["code"] = *code_;
  return {{"error", error}};
}

ApiError invalid_field(const std::string& param, const std::string& problem) {
  return ApiError(400, param + ": " + problem, param);
}

}  // namespace flashdraft::server
