// The tpu device profiler: torch.profiler's PrivateUse1 activity through the
// registry PyTorch offers custom devices (PrivateUse1ProfilerRegistry), which
// hands Kineto our IActivityProfiler. While a profiler records with
// ProfilerActivity.PrivateUse1 the engine's event buffer records (the events
// torch.tpu.trace writes, so the two cannot run at once); at the end Kineto
// receives them as activities of a "tpu" device: compiles, flushes, launches
// and transfers on a "host (engine)" row, program executions on "tpu:0" (from
// launch, or the end of the execution before, to the completion event).
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <GenericTraceActivity.h>
#include <IActivityProfiler.h>
#include <libkineto.h>
#include <output_base.h>

#include "torchtpu.h"

namespace torchtpu {
namespace {

constexpr int64_t kDeviceId = 0x7470;  // the Kineto "process" of the tpu rows
constexpr int64_t kHostRow = 1;        // compiles, flushes, launches, transfers
constexpr int64_t kDeviceRow = 2;      // program executions on tpu:0

const char* kind_name(int32_t k) {
  static const char* names[] = {"compile", "load", "execute", "flush", "h2d", "d2h", "fallback"};
  return k >= 0 && k < 7 ? names[k] : "event";
}

class Session : public libkineto::IActivityProfilerSession {
 public:
  void start() override {
    char err[256];
    started_ = ttpu_trace_start(0, err, sizeof(err)) == TTPU_OK;
    if (!started_) errors_.emplace_back(err);
  }

  void stop() override {
    if (!started_) return;
    started_ = false;
    std::vector<ttpu_trace_event> evs(1024);
    for (;;) {
      int64_t n = ttpu_trace_stop_events(evs.data(), static_cast<int64_t>(evs.size()));
      if (n <= static_cast<int64_t>(evs.size())) {
        evs.resize(std::max<int64_t>(n, 0));
        break;
      }
      evs.resize(n);
    }
    events_ = std::move(evs);
  }

  std::vector<std::string> errors() override { return errors_; }

  void processTrace(libkineto::ActivityLogger& logger) override {
    int64_t device_free = 0;
    for (const auto& ev : events_) {
      bool exec = ev.kind == TTPU_TRACE_EXECUTE;
      auto type = exec ? libkineto::ActivityType::PRIVATEUSE1_RUNTIME
                       : libkineto::ActivityType::PRIVATEUSE1_DRIVER;
      libkineto::GenericTraceActivity host(span_, type, exec ? std::string("launch") : std::string(ev.name));
      host.startTime = ev.start_ns;
      host.endTime = ev.start_ns + std::max<int64_t>(ev.dur_ns, 1);
      host.device = kDeviceId;
      host.resource = kHostRow;
      host.addMetadataQuoted("kind", kind_name(ev.kind));
      if (ev.bytes) host.addTypedMetadata("bytes", libkineto::TypedValue{static_cast<int64_t>(ev.bytes)});
      if (ev.ops) host.addTypedMetadata("ops", libkineto::TypedValue{static_cast<int64_t>(ev.ops)});
      logger.handleGenericActivity(host);
      if (exec && ev.done_ns > 0) {
        libkineto::GenericTraceActivity run(span_, libkineto::ActivityType::CONCURRENT_KERNEL, "tpu program");
        run.startTime = std::max(ev.start_ns, device_free);
        run.endTime = std::max(ev.done_ns, run.startTime + 1);
        device_free = ev.done_ns;
        run.device = kDeviceId;
        run.resource = kDeviceRow;
        run.addMetadataQuoted("kind", "execute");
        run.addTypedMetadata("ops", libkineto::TypedValue{static_cast<int64_t>(ev.ops)});
        logger.handleGenericActivity(run);
      }
    }
  }

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    return std::make_unique<libkineto::DeviceInfo>(libkineto::DeviceInfo{kDeviceId, kDeviceId, "tpu", "tpu"});
  }

  std::vector<libkineto::ResourceInfo> getResourceInfos() override {
    return {libkineto::ResourceInfo{kHostRow, kHostRow, kDeviceId, "host (engine)"},
            libkineto::ResourceInfo{kDeviceRow, kDeviceRow, kDeviceId, "tpu:0"}};
  }

  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override { return nullptr; }

 private:
  bool started_ = false;
  std::vector<std::string> errors_;
  std::vector<ttpu_trace_event> events_;
  libkineto::TraceSpan span_{0, 0, "tpu"};
};

class DeviceProfiler : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }

  const std::set<libkineto::ActivityType>& availableActivities() const override { return types_; }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      const std::set<libkineto::ActivityType>& activity_types, const libkineto::Config&) override {
    for (auto t : activity_types) {
      if (types_.count(t)) return std::make_unique<Session>();
    }
    return nullptr;
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      int64_t, int64_t, const std::set<libkineto::ActivityType>& activity_types,
      const libkineto::Config& config) override {
    return configure(activity_types, config);
  }

 private:
  std::string name_{"torchtpu"};
  std::set<libkineto::ActivityType> types_{libkineto::ActivityType::PRIVATEUSE1_RUNTIME,
                                           libkineto::ActivityType::PRIVATEUSE1_DRIVER};
};

REGISTER_PRIVATEUSE1_PROFILER(DeviceProfiler);

}  // namespace
}  // namespace torchtpu
