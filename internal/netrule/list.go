package netrule

import "fmt"

// IndexError is the error of one entry of a list: the caller, which knows
// the field, names it field[Index] (a JSON key) or by its flag alone.
type IndexError struct {
	Index int
	Err   error
}

func (e *IndexError) Error() string { return fmt.Sprintf("[%d]: %v", e.Index, e.Err) }
func (e *IndexError) Unwrap() error { return e.Err }

// ParsePatterns parses a list of domain patterns; the error is an
// *IndexError for the first bad entry. An empty list is nil.
func ParsePatterns(list []string) ([]Pattern, error) {
	return parseList(list, ParsePattern)
}

// ParseResolves parses a list of --resolve entries; the error is an
// *IndexError for the first bad entry. An empty list is nil.
func ParseResolves(list []string) ([]Resolve, error) {
	return parseList(list, ParseResolve)
}

func parseList[T any](list []string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for i, s := range list {
		v, err := parse(s)
		if err != nil {
			return nil, &IndexError{Index: i, Err: err}
		}
		out = append(out, v)
	}
	return out, nil
}
