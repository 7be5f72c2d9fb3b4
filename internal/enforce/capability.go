package enforce

import (
	"fmt"
	"strconv"
	"strings"
)

// capabilityNames are Linux's capability names, lower case without the
// CAP_ prefix, by number (capabilities(7)).
var capabilityNames = []string{
	"chown", "dac_override", "dac_read_search", "fowner", "fsetid", "kill", "setgid", "setuid",
	"setpcap", "linux_immutable", "net_bind_service", "net_broadcast", "net_admin", "net_raw",
	"ipc_lock", "ipc_owner", "sys_module", "sys_rawio", "sys_chroot", "sys_ptrace", "sys_pacct",
	"sys_admin", "sys_boot", "sys_nice", "sys_resource", "sys_time", "sys_tty_config", "mknod",
	"lease", "audit_write", "audit_control", "setfcap", "mac_override", "mac_admin", "syslog",
	"wake_alarm", "block_suspend", "audit_read", "perfmon", "bpf", "checkpoint_restore",
}

// CapabilityName is the name of Linux capability c as the report and
// --cap-add spell it: "CAP_NET_BIND_SERVICE".
func CapabilityName(c int) string {
	if c >= 0 && c < len(capabilityNames) {
		return "CAP_" + strings.ToUpper(capabilityNames[c])
	}
	return "CAP_" + strconv.Itoa(c)
}

// ParseCapability reads a Linux capability name, with or without the CAP_
// prefix, in any case ("net_bind_service", "CAP_NET_BIND_SERVICE"), and
// returns its number.
func ParseCapability(s string) (int, error) {
	n := strings.ToLower(strings.TrimPrefix(strings.ToUpper(s), "CAP_"))
	for i, name := range capabilityNames {
		if name == n {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown capability %q (a capabilities(7) name, e.g. CAP_NET_BIND_SERVICE)", s)
}

// CanonicalCapabilities parses names and returns them in the report's
// spelling, without duplicates, in the order given.
func CanonicalCapabilities(names []string) ([]string, error) {
	var out []string
	for _, s := range names {
		c, err := ParseCapability(s)
		if err != nil {
			return nil, err
		}
		if n := CapabilityName(c); !contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
