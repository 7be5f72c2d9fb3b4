//go:build linux || darwin || windows

package host

// compiled is Compile for Explain and Describe.
func compiled(c Call) (backendPlan, error) {
	plan, err := Compile(c)
	return plan, err
}
