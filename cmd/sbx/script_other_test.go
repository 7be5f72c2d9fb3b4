//go:build !linux

package main

import (
	"fmt"
	"strings"
)

// scriptCondition: off Linux there is no Landlock nor user namespace, and
// no script needs root.
func scriptCondition(cond string) (bool, error) {
	switch name, _, _ := strings.Cut(cond, ":"); name {
	case "landlock", "userns", "root":
		return false, nil
	}
	return false, fmt.Errorf("unknown condition [%s]", cond)
}
