package landlock

// Rule grants Access on the tree (or file) at Path.
type Rule struct {
	Path   string
	Access uint64
}

// Ruleset is a compiled Landlock domain: the rights it handles (so denies
// unless a rule grants them), its scopes and its rules. Plans carry it to
// the thread that restricts itself (RestrictSelf, Linux only), across the
// unprivileged stage's JSON too.
type Ruleset struct {
	ABI        int
	HandledFS  uint64
	HandledNet uint64
	Scoped     uint64
	Rules      []Rule
}
