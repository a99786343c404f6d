package engine

import (
	"os"
	"strings"
)

// quietPluginLogs silences the plugin's own logging (absl INFO and WARNING
// lines on stderr, such as "cpu_device_count set via create_options") before
// the plugin is loaded. TORCHTPU_LOG=plugin, or the plugin's own variable
// TF_CPP_MIN_LOG_LEVEL set by the user, leaves the plugin's logging as it is.
// Errors the plugin logs are still printed.
func quietPluginLogs() {
	if logEnabled("plugin") {
		return
	}
	if _, set := os.LookupEnv("TF_CPP_MIN_LOG_LEVEL"); !set {
		os.Setenv("TF_CPP_MIN_LOG_LEVEL", "2")
	}
}

// logEnabled reports whether TORCHTPU_LOG, a comma-separated list of
// topics, names topic.
func logEnabled(topic string) bool {
	for _, t := range strings.Split(os.Getenv("TORCHTPU_LOG"), ",") {
		if strings.TrimSpace(t) == topic {
			return true
		}
	}
	return false
}
