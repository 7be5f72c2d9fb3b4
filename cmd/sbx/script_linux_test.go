//go:build linux

package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/enforce/linux"
	"github.com/sbx-sandbox/sbx/internal/landlock"
)

// scriptCondition answers the conditions scripts use beyond testscript's:
// [landlock:N] the kernel has Landlock ABI N or later; [userns] the
// calling user can make a user namespace (tried, as sbx explain does);
// [root] the tests run as root.
func scriptCondition(cond string) (bool, error) {
	name, arg, _ := strings.Cut(cond, ":")
	switch name {
	case "landlock":
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 {
			return false, fmt.Errorf("condition [%s]: want [landlock:N] with N an ABI from 1", cond)
		}
		return landlock.RunningABI() >= n, nil
	case "userns":
		return arg == "" && linux.TryUserNS() == nil, nil
	case "root":
		return os.Geteuid() == 0, nil
	}
	return false, fmt.Errorf("unknown condition [%s]", cond)
}
