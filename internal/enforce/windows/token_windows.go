//go:build windows

package windows

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
)

// x/sys/windows has no CreateRestrictedToken; advapi32 exports it.
var procCreateRestrictedToken = windows.NewLazySystemDLL("advapi32.dll").NewProc("CreateRestrictedToken")

// CreateRestrictedToken flags (winnt.h).
const (
	disableMaxPrivilege = 0x1
	writeRestricted     = 0x8
)

// restrictedToken makes the command's primary token from sbx's own: write
// restricted to sids, and every privilege but SeChangeNotify removed (an
// administrator's SeBackup/SeRestore privileges would bypass the ACLs).
//
// BOOL CreateRestrictedToken(HANDLE ExistingTokenHandle, DWORD Flags,
//
//	DWORD DisableSidCount, PSID_AND_ATTRIBUTES SidsToDisable,
//	DWORD DeletePrivilegeCount, PLUID_AND_ATTRIBUTES PrivilegesToDelete,
//	DWORD RestrictedSidCount, PSID_AND_ATTRIBUTES SidsToRestrict,
//	PHANDLE NewTokenHandle);
func restrictedToken(plan *Plan) (windows.Token, error) {
	var own windows.Token
	access := uint32(windows.TOKEN_DUPLICATE | windows.TOKEN_ASSIGN_PRIMARY | windows.TOKEN_QUERY | windows.TOKEN_ADJUST_DEFAULT)
	if err := windows.OpenProcessToken(windows.CurrentProcess(), access, &own); err != nil {
		return 0, fmt.Errorf("OpenProcessToken: %w", err)
	}
	defer own.Close()
	sids, err := restrictingSIDs(own, plan.RestrictingSIDs)
	if err != nil {
		return 0, err
	}
	var tok windows.Token
	r, _, e := procCreateRestrictedToken.Call(uintptr(own), disableMaxPrivilege|writeRestricted,
		0, 0, 0, 0, uintptr(len(sids)), uintptr(unsafe.Pointer(&sids[0])), uintptr(unsafe.Pointer(&tok)))
	if r == 0 {
		return 0, fmt.Errorf("CreateRestrictedToken: %w", e)
	}
	if err := setDefaultDACL(tok, own, sids[0].Sid); err != nil {
		tok.Close()
		return 0, err
	}
	return tok, nil
}

// restrictingSIDs resolves the plan's SID strings; LogonSID is the logon SID
// of own (the window station and desktop grant it, and a console program
// needs them).
func restrictingSIDs(own windows.Token, names []string) ([]windows.SIDAndAttributes, error) {
	var out []windows.SIDAndAttributes
	for _, n := range names {
		if n == LogonSID {
			groups, err := own.GetTokenGroups()
			if err != nil {
				return nil, fmt.Errorf("GetTokenInformation TokenGroups: %w", err)
			}
			for _, g := range groups.AllGroups() {
				if g.Attributes&windows.SE_GROUP_LOGON_ID == windows.SE_GROUP_LOGON_ID {
					s, err := g.Sid.Copy()
					if err != nil {
						return nil, fmt.Errorf("CopySid: %w", err)
					}
					out = append(out, windows.SIDAndAttributes{Sid: s})
				}
			}
			continue
		}
		s, err := windows.StringToSid(n)
		if err != nil {
			return nil, fmt.Errorf("restricting sid %s: %w", n, err)
		}
		out = append(out, windows.SIDAndAttributes{Sid: s})
	}
	return out, nil
}

// setDefaultDACL gives objects the command creates outside the roots (pipes,
// events, its own threads) a DACL that its restricting SIDs can write:
// without the call SID in it, a write-restricted process cannot open what it
// created itself.
func setDefaultDACL(tok, own windows.Token, call *windows.SID) error {
	user, err := own.GetTokenUser()
	if err != nil {
		return fmt.Errorf("GetTokenInformation TokenUser: %w", err)
	}
	system, err := windows.CreateWellKnownSid(windows.WinLocalSystemSid)
	if err != nil {
		return fmt.Errorf("CreateWellKnownSid: %w", err)
	}
	var entries []windows.EXPLICIT_ACCESS
	for _, s := range []*windows.SID{user.User.Sid, system, call} {
		entries = append(entries, windows.EXPLICIT_ACCESS{
			AccessPermissions: windows.GENERIC_ALL,
			AccessMode:        windows.GRANT_ACCESS,
			Trustee: windows.TRUSTEE{TrusteeForm: windows.TRUSTEE_IS_SID, TrusteeType: windows.TRUSTEE_IS_UNKNOWN,
				TrusteeValue: windows.TrusteeValueFromSID(s)},
		})
	}
	acl, err := windows.ACLFromEntries(entries, nil)
	if err != nil {
		return fmt.Errorf("SetEntriesInAcl: %w", err)
	}
	info := struct{ DefaultDacl *windows.ACL }{acl}
	if err := windows.SetTokenInformation(tok, windows.TokenDefaultDacl, (*byte)(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		return fmt.Errorf("SetTokenInformation TokenDefaultDacl: %w", err)
	}
	return nil
}
