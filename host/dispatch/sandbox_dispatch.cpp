// sandbox_dispatch.cpp — see sandbox_dispatch.h.
#include "host/dispatch/sandbox_dispatch.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "clawguard/json_dump.h"
#include "clawguard/limits.h"
#include "host/dispatch/plugin_call.h"
#include "host/sandbox/worker_protocol.h"

namespace clawguard::host {

using sandbox::FrameType;
using SteadyClock = std::chrono::steady_clock;

namespace {

sandbox::DeliverMsg DeliveryOf(const DispatchContext& ctx) {
  sandbox::DeliverMsg m;
  m.route = std::string(ctx.route);
  m.key = std::string(ctx.event_key);
  // Only what the signature authenticated is shown as headers (plugin.h, cg_request).
  m.names.push_back("webhook-id");
  m.values.push_back(std::string(ctx.webhook_id));
  if (ctx.request != nullptr) {
    m.method = ctx.request->method;
    m.path = ctx.request->target;
    m.body = ctx.request->body;
    std::optional<std::string_view> ts = ctx.request->headers.Get("webhook-timestamp");
    if (!ts) ts = ctx.request->headers.Get("svix-timestamp");  // byte-equal when both came
    if (ts) {
      m.names.push_back("webhook-timestamp");
      m.values.push_back(std::string(*ts));
    }
  }
  return m;
}

}  // namespace

Result<std::shared_ptr<SandboxDispatcher>> SandboxDispatcher::Create(
    DispatchOptions options, std::vector<SandboxTarget> targets) {
  if (options.handler_timeout.count() <= 0 || options.lease.count() <= 0) {
    return Status(Reason::kConfigInvalid, "plugin dispatch: handler_timeout and lease must be > 0");
  }
  if (options.erp.outbox == nullptr || options.erp.sender == nullptr ||
      options.erp.clock == nullptr) {
    return Status(Reason::kConfigInvalid,
                  "plugin dispatch: the ERP outbox, sender and clock are required");
  }
  std::map<std::string, Entry> entries;
  for (SandboxTarget& t : targets) {
    if (t.worker == nullptr || t.name.empty()) {
      return Status(Reason::kConfigInvalid,
                    "plugin dispatch: target '" + t.name + "' has no worker");
    }
    CLAWGUARD_ASSIGN_OR_RETURN(CapabilitySet caps, CapabilitySet::Create(t.erp_capabilities));
    if (!entries.emplace(t.name, Entry{std::move(t.worker), std::move(caps)}).second) {
      return Status(Reason::kConfigInvalid,
                    "plugin dispatch: plugin '" + t.name + "' is listed twice");
    }
  }
  return std::shared_ptr<SandboxDispatcher>(
      new SandboxDispatcher(std::move(options), std::move(entries)));
}

Dispatcher SandboxDispatcher::AsDispatcher() const {
  std::shared_ptr<const SandboxDispatcher> self = shared_from_this();
  return [self](const DispatchContext& ctx) { return self->Dispatch(ctx); };
}

DispatchReport SandboxDispatcher::DispatchDetailed(const DispatchContext& ctx) const {
  return Audited(options_.erp.audit, ctx, Run(ctx));
}

DispatchReport SandboxDispatcher::Run(const DispatchContext& ctx) const {
  const auto it = entries_.find(std::string(ctx.plugin));
  if (it == entries_.end())
    return {PluginOutcome::Failed("no plugin is loaded under this name"), {}};
  const Entry& entry = it->second;
  auto gw = ErpGateway::Create(options_.erp, entry.capabilities,
                               ErpDelivery{std::string(ctx.plugin), std::string(ctx.event_key),
                                           ctx.fencing_token, ctx.level});
  if (!gw.ok()) return {PluginOutcome::Failed(gw.error().message()), {}};
  std::unique_ptr<ErpGateway> gateway = std::move(gw).value();

  const auto deadline = SteadyClock::now() + options_.handler_timeout;
  const auto renew_every = std::max(std::chrono::milliseconds(1), options_.lease / 3);
  auto next_renew = SteadyClock::now() + renew_every;

  auto begun = entry.worker->Begin(DeliveryOf(ctx));
  if (!begun.ok()) {
    PluginOutcome out = PluginOutcome::Unavailable(begun.error().message());
    out.never_ran = true;
    return {std::move(out), {}};
  }
  std::unique_ptr<PluginWorker::Session> session = std::move(begun).value();

  FinishedCall done;
  int logs = 0;
  const std::string plugin(ctx.plugin);
  // Violation: the worker sent what no plugin API call produces. It is killed (every delivery on
  // it ends) and this one is unavailable.
  const auto violation = [&](const std::string& what) -> DispatchReport {
    session->KillWorker("protocol", what);
    return {PluginOutcome::Unavailable("the plugin's worker broke the protocol: " + what), {}};
  };
  const auto timed_out = [&]() -> DispatchReport {
    session->KillWorker("timeout", "a delivery exceeded handler_timeout");
    PluginOutcome out = PluginOutcome::TimedOut(kTimedOutDetail);
    out.plugin_stopped = true;
    return {std::move(out), {}};
  };
  const auto stopped = [&]() -> DispatchReport {
    return {PluginOutcome::Unavailable("the plugin's worker stopped: " + session->gone_cause()),
            {}};
  };
  for (;;) {
    const auto now = SteadyClock::now();
    std::optional<sandbox::Frame> f;
    if (now >= deadline) {
      // Frames that arrived in time are read first: this thread (or fiber) may have been held
      // elsewhere past the deadline while the plugin had finished.
      f = session->Next(std::chrono::milliseconds(0));
      if (!f) {
        if (session->gone()) return stopped();
        return timed_out();
      }
    } else {
      if (now >= next_renew) {
        next_renew = now + renew_every;
        if (ctx.renew_lease && !ctx.renew_lease()) {
          session->Abandon();
          return {PluginOutcome::Failed(kLeaseLostDetail), {}};
        }
      }
      const auto wait = std::chrono::ceil<std::chrono::milliseconds>(
          std::min(deadline, next_renew) - SteadyClock::now());
      f = session->Next(std::max(std::chrono::milliseconds(1), wait));
      if (!f) {
        if (session->gone()) return stopped();
        continue;
      }
    }
    switch (f->type) {
      case FrameType::kErpCall: {
        std::optional<sandbox::ErpCallMsg> m = sandbox::ErpCallMsg::Decode(f->payload);
        if (!m) return violation("a malformed kErpCall frame");
        // The worker cuts both as the in-process API does; longer ones come from no API call.
        if (m->method.size() > limits::kMaxErpMethodLength ||
            m->path.size() > limits::kMaxErpPathLength) {
          return violation("an ERP call's method or path over its limit");
        }
        cg_bytes reply{nullptr, 0};
        const int result = gateway->Call(m->method, m->path, m->body, &reply);
        // The call is the host's and ends by erp.timeout; if handler_timeout passed meanwhile,
        // the delivery timed out (whatever became of the worker while the call ran).
        if (SteadyClock::now() >= deadline) return timed_out();
        sandbox::ErpReplyMsg r;
        r.result = result;
        if (reply.data != nullptr) r.reply.assign(reply.data, reply.len);
        gateway->ForgetReplies();  // copied: the worker holds it now
        (void)session->Send(FrameType::kErpReply, r.Encode());
        break;
      }
      case FrameType::kRespond: {
        std::optional<sandbox::RespondMsg> m = sandbox::RespondMsg::Decode(f->payload);
        if (!m) return violation("a malformed kRespond frame");
        if (++done.responds > 1) break;
        if (m->status == -1 && m->body.empty()) {
          done.respond_problem = "respond() got a body at a null pointer or over " +
                                 std::to_string(sandbox::kMaxWorkerAnswer) + " bytes";
          break;
        }
        if (std::optional<std::string> problem =
                RespondProblem(m->status, m->content_type, false, m->body.size())) {
          done.respond_problem = std::move(*problem);
          break;
        }
        done.status = m->status;
        done.content_type = std::move(m->content_type);
        done.answer = std::move(m->body);
        break;
      }
      case FrameType::kLog: {
        std::optional<sandbox::LogMsg> m = sandbox::LogMsg::Decode(f->payload);
        if (!m) return violation("a malformed kLog frame");
        if (!options_.erp.audit) break;
        ++logs;
        if (logs <= kMaxLogsPerDelivery) {
          options_.erp.audit(PluginLogLine(
              plugin, m->level,
              std::string_view(m->message).substr(0, std::min(m->message.size(), kMaxLogMessage))));
        } else if (logs == kMaxLogsPerDelivery + 1) {
          options_.erp.audit(
              DumpJson({{"event", "plugin_log_dropped"},
                        {"plugin", plugin},
                        {"event_key", ctx.event_key},
                        {"detail", "more than " + std::to_string(kMaxLogsPerDelivery) +
                                       " log lines in one delivery"}}));
        }
        break;
      }
      case FrameType::kDone: {
        std::optional<sandbox::DoneMsg> m = sandbox::DoneMsg::Decode(f->payload);
        if (!m) return violation("a malformed kDone frame");
        done.rc = m->rc;
        done.erp = gateway->outcome();
        return ReportFor(std::move(done));
      }
      default: return violation("an unexpected frame");
    }
  }
}

}  // namespace clawguard::host
