// SPDX-License-Identifier: Apache-2.0
// The two formats of encore's log lines, in a header of its own so that
// ManagerOptions can name it without bringing in spdlog.
#ifndef ENCORE_CORE_LOG_FORMAT_H_
#define ENCORE_CORE_LOG_FORMAT_H_

namespace encore {

// kKeyValue: `event=captured method=forward us=812.000`; kJson: one object per
// line, `{"ts":"2026-12-01T10:00:00.123456Z","level":"info","event":"captured",...}`.
enum class LogFormat { kKeyValue, kJson };

}  // namespace encore

#endif  // ENCORE_CORE_LOG_FORMAT_H_
