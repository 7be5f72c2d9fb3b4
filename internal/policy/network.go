package policy

import (
	"slices"

	"github.com/sbx-sandbox/sbx/internal/netrule"
	"github.com/sbx-sandbox/sbx/internal/profiles"
)

// NetworkPlan is how one call reaches the network. DecideNetwork alone
// decides it, so Build and the guesses made before a call is prepared
// (call.PrestartHint) cannot disagree.
type NetworkPlan int

const (
	// NetworkOff: a network namespace of the call's own, with only its
	// loopback.
	NetworkOff NetworkPlan = iota
	// NetworkByDomain: the call's own namespace, and sbx's proxy in it
	// letting through the hosts of allowed_domains (Policy.Domains).
	NetworkByDomain
	// NetworkProxied: the whole network, but through the proxy in the
	// call's own namespace, because denied_domains stand beside it and
	// only a proxy can refuse a name (Domains.AllowAll).
	NetworkProxied
	// NetworkHost: the host's network (the whole network asked for, or
	// danger-full-access).
	NetworkHost
)

func (n NetworkPlan) String() string {
	return [...]string{"off", "by-domain", "proxied", "host"}[n]
}

// OwnNamespace reports whether the call runs in a network namespace of its
// own (every plan but the host's network).
func (n NetworkPlan) OwnNamespace() bool { return n != NetworkHost }

// DecideNetwork decides the network of a call in mode with the effective
// additional permissions add (grants and --network merged in).
func DecideNetwork(mode profiles.Mode, add profiles.Profile) NetworkPlan {
	if mode == profiles.DangerFullAccess {
		return NetworkHost
	}
	switch add.NetworkMode() {
	case profiles.NetworkAll:
		if len(add.DeniedDomains()) > 0 {
			return NetworkProxied
		}
		return NetworkHost
	case profiles.NetworkDomains:
		return NetworkByDomain
	}
	return NetworkOff
}

// buildNetwork is the network part of Build: DecideNetwork's plan as the
// policy's Network and Domains. The profile's patterns were validated
// where it was decoded (profiles.Normalize), so an error here means a
// Request made around that check, and Build refuses it naming the field.
func buildNetwork(req Request) (Network, *Domains, error) {
	plan := DecideNetwork(req.Mode, req.Additional)
	switch plan {
	case NetworkHost:
		return NetworkFull, nil, nil
	case NetworkOff:
		return NetworkIsolated, nil, nil
	}
	denied, err := profiles.ParseDomainPatterns(req.Additional.DeniedDomains(), "additional_permissions.network.denied_domains")
	if err != nil {
		return NetworkIsolated, nil, err
	}
	if plan == NetworkProxied {
		// A full network beside denied_domains (--network with
		// --deny-domain, or a grant of the whole network merged with a
		// deny list) goes through the proxy, which alone can refuse a
		// name.
		p := Policy{Network: NetworkFull}.DenyDomains(denied)
		p.Domains.Resolve = req.Resolve
		return p.Network, p.Domains, nil
	}
	allowed, err := profiles.ParseDomainPatterns(req.Additional.AllowedDomains(), "additional_permissions.network.allowed_domains")
	if err != nil {
		return NetworkIsolated, nil, err
	}
	return NetworkIsolated, &Domains{Allowed: allowed, Denied: denied,
		AllowPrivateAddresses: req.Additional.AllowPrivateAddresses(), Resolve: req.Resolve}, nil
}

// Domains is what the proxy of a network-by-domain call lets through:
// patterns and pinned names, parsed where the request entered sbx and
// carried typed to the proxy (their JSON is their canonical spelling).
type Domains struct {
	Allowed []netrule.Pattern `json:"allowed"`
	// AllowAll allows every host that Denied does not name (a full
	// network under the guard's deny_domains).
	AllowAll              bool              `json:"allow_all,omitempty"`
	Denied                []netrule.Pattern `json:"denied,omitempty"`
	AllowPrivateAddresses bool              `json:"allow_private_addresses,omitempty"`
	// Resolve pins HOST:PORT to addresses, curl's --resolve
	// (netrule.ParseResolve).
	Resolve []netrule.Resolve `json:"resolve,omitempty"`
}

// DenyDomains returns p with deny joined to what its network refuses: to
// the denied list of a network by domain, or, for a full network, by
// putting it behind the proxy with every other host allowed (private
// addresses included: the full network reached them), since only a proxy
// can refuse a name. A policy without network is returned as it is. The
// guard's deny_domains and a merged profile's denied_domains beside a
// full network both come this way.
func (p Policy) DenyDomains(deny []netrule.Pattern) Policy {
	switch {
	case len(deny) == 0:
	case p.Domains != nil:
		d := *p.Domains // a copy: p's Domains may be shared with the caller's Policy
		d.Denied = slices.Clone(d.Denied)
		for _, s := range deny {
			if !slices.Contains(d.Denied, s) {
				d.Denied = append(d.Denied, s)
			}
		}
		p.Domains = &d
	case p.Network == NetworkFull:
		p.Network = NetworkIsolated
		p.Domains = &Domains{AllowAll: true, Denied: slices.Clone(deny), AllowPrivateAddresses: true}
	}
	return p
}
