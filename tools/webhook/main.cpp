// main.cpp — clawguard-webhook: a Standard Webhooks v1 client for the demo and the benchmarks.
//
//   clawguard-webhook send  --url URL --secret-env VAR --id ID --body FILE [--expect STATUS]
//                           [--timestamp-offset S]
//   clawguard-webhook storm N --url URL --secret-env VAR --id ID --body FILE [--max-attempts 20]
//                           [--max-wait 30]
//   clawguard-webhook gen   N --secret-env VAR --template FILE --out FILE [--id-prefix msg_gen_]
//
// The secret ("whsec_<base64>") is read from the environment variable VAR, never from argv, and
// never printed. `send` prints {"status","replayed","content_type","retry_after","body"};
// `storm` prints the summary of modes.h RunStorm; `gen` prints {"written": N, "file": F}.
// Exit codes: 0 done (send: the answer had the --expect status, when given; storm: every
// delivery got a final answer other than 409), 1 otherwise, 2 usage or connection error.
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "clawguard/file_io.h"
#include "webhook/delivery.h"
#include "webhook/modes.h"

namespace {

using clawguard::Result;
using clawguard::Status;

constexpr uint64_t kMaxBodyFile = 1024 * 1024;

int Fail(const Status& s) {
  std::cerr << "clawguard-webhook: " << s.ToString() << "\n";
  return 2;
}

struct Common {
  std::string url, secret_env, ca, id, body_file;
  int timeout_ms = 15'000;
};

Result<std::unique_ptr<clawguard::tools::WebhookSender>> MakeSender(const Common& c) {
  CLAWGUARD_ASSIGN_OR_RETURN(clawguard::SecretBytes key,
                             clawguard::tools::ReadSecretFromEnv(c.secret_env));
  return clawguard::tools::WebhookSender::Create(c.url, std::move(key), c.ca,
                                                 std::chrono::milliseconds(c.timeout_ms));
}

void AddSendOptions(CLI::App* cmd, Common& c) {
  cmd->add_option("--url", c.url,
                  "route URL, e.g. http://127.0.0.1:8080/webhooks/acme-orders/order.created")
      ->required();
  cmd->add_option("--secret-env", c.secret_env, "environment variable holding the whsec_ secret")
      ->required();
  cmd->add_option("--id", c.id, "webhook-id of the event")->required();
  cmd->add_option("--body", c.body_file, "file with the raw body (sent byte for byte)")->required();
  cmd->add_option("--ca", c.ca, "PEM roots for an https URL");
  cmd->add_option("--timeout-ms", c.timeout_ms, "deadline of one request")
      ->check(CLI::Range(1, 600'000));
}

int RunSend(const Common& c, int64_t offset, int expect) {
  auto sender = MakeSender(c);
  if (!sender.ok()) return Fail(sender.error());
  auto body = clawguard::ReadFileBounded(c.body_file, kMaxBodyFile);
  if (!body.ok()) return Fail(body.error());
  const int64_t ts = clawguard::SystemClock::Instance().NowSeconds() + offset;
  auto reply = (*sender)->Send((*sender)->Sign(c.id, ts, std::move(body).value()));
  if (!reply.ok()) return Fail(reply.error());
  nlohmann::json out = {
      {"status", reply->status},
      {"replayed", reply->headers.Get("Idempotent-Replayed").value_or("") == "true"},
      {"content_type", std::string(reply->headers.Get("Content-Type").value_or(""))},
      {"body", reply->body}};
  const auto retry_after = reply->headers.Get("Retry-After");
  out["retry_after"] =
      retry_after ? nlohmann::json(std::string(*retry_after)) : nlohmann::json(nullptr);
  std::cout << out.dump() << std::endl;
  return (expect == 0 || reply->status == expect) ? 0 : 1;
}

int RunStormCommand(const Common& c, clawguard::tools::StormOptions options) {
  auto sender = MakeSender(c);
  if (!sender.ok()) return Fail(sender.error());
  auto body = clawguard::ReadFileBounded(c.body_file, kMaxBodyFile);
  if (!body.ok()) return Fail(body.error());
  options.id = c.id;
  options.body = std::move(body).value();
  const nlohmann::json summary =
      clawguard::tools::RunStorm(**sender, options, clawguard::SystemClock::Instance());
  std::cout << summary.dump() << std::endl;
  const bool all_final = summary["failures"] == 0 && !summary["final_statuses"].contains("409");
  return all_final ? 0 : 1;
}

int RunGenCommand(const std::string& secret_env, const std::string& template_file,
                  const std::string& out, clawguard::tools::GenOptions options) {
  auto key = clawguard::tools::ReadSecretFromEnv(secret_env);
  if (!key.ok()) return Fail(key.error());
  auto tpl = clawguard::ReadFileBounded(template_file, kMaxBodyFile);
  if (!tpl.ok()) return Fail(tpl.error());
  options.body_template = std::move(tpl).value();
  while (!options.body_template.empty() && options.body_template.back() == '\n')
    options.body_template.pop_back();
  if (Status s = clawguard::tools::RunGen(*key, options, out, clawguard::SystemClock::Instance());
      !s.ok())
    return Fail(s);
  std::cout << nlohmann::json{{"written", options.count}, {"file", out}}.dump() << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "clawguard-webhook — send Standard Webhooks deliveries (secret from an environment "
      "variable)"};
  app.require_subcommand(1);

  Common send_c;
  int64_t offset = 0;
  int expect = 0;
  auto* send = app.add_subcommand("send", "one signed delivery");
  AddSendOptions(send, send_c);
  send->add_option("--timestamp-offset", offset,
                   "seconds added to the current time in webhook-timestamp");
  send->add_option("--expect", expect, "exit 1 unless the answer has this status")
      ->check(CLI::Range(100, 599));

  Common storm_c;
  clawguard::tools::StormOptions storm_o;
  int max_wait_s = 30;
  auto* storm =
      app.add_subcommand("storm", "N concurrent deliveries of one event, re-signed, 409s retried");
  storm->add_option("N", storm_o.deliveries, "number of deliveries")
      ->required()
      ->check(CLI::Range(1, clawguard::tools::kMaxStormDeliveries));
  AddSendOptions(storm, storm_c);
  storm->add_option("--max-attempts", storm_o.max_attempts, "attempts per delivery")
      ->check(CLI::Range(1, 100));
  storm->add_option("--max-wait", max_wait_s, "longest Retry-After honoured, seconds")
      ->check(CLI::Range(1, 600));

  clawguard::tools::GenOptions gen_o;
  std::string gen_secret, gen_template, gen_out;
  auto* gen = app.add_subcommand("gen", "N distinct pre-signed deliveries, one per line, for wrk");
  gen->add_option("N", gen_o.count, "number of requests")
      ->required()
      ->check(CLI::Range(int64_t{1}, clawguard::tools::kMaxGenRequests));
  gen->add_option("--secret-env", gen_secret, "environment variable holding the whsec_ secret")
      ->required();
  gen->add_option("--template", gen_template, "one-line JSON body containing {{seq}}")->required();
  gen->add_option("--out", gen_out, "output file")->required();
  gen->add_option("--id-prefix", gen_o.id_prefix, "webhook-id prefix");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (*send) return RunSend(send_c, offset, expect);
  if (*storm) {
    storm_o.max_wait = std::chrono::seconds(max_wait_s);
    return RunStormCommand(storm_c, storm_o);
  }
  return RunGenCommand(gen_secret, gen_template, gen_out, gen_o);
}
