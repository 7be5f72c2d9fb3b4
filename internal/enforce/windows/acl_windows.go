//go:build windows

package windows

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
)

// x/sys/windows has GetAce but no DeleteAce.
var procDeleteAce = windows.NewLazySystemDLL("advapi32.dll").NewProc("DeleteAce")

// aclLockName serialises sbx's read-modify-write of DACLs within a logon
// session: two calls on the same workspace at once would otherwise each
// write back a DACL without the other's ACE.
const aclLockName = `Local\sbx-acl-edit`

// grants are the ACEs of one call as applied, for Revoke.
type grants struct {
	call    *windows.SID
	applied []ACE
}

// applyACEs adds the plan's ACEs in order. On an error it removes the ones
// already added, so nothing is left half-applied.
//
// IMPORTANT: adding an inheritable ACE makes Windows propagate it to every
// file below the root, which takes time in proportion to the tree's size.
// IMPORTANT: if sbx is killed before revoke, the ACEs stay; they name a SID
// no later token holds, so they grant nothing, and the next successful edit
// of that DACL by anyone keeps them as inert clutter.
func applyACEs(plan *Plan) (*grants, error) {
	call, err := windows.StringToSid(plan.CallSID)
	if err != nil {
		return nil, fmt.Errorf("call sid %s: %w", plan.CallSID, err)
	}
	g := &grants{call: call}
	unlock, err := lockACLs()
	if err != nil {
		return nil, err
	}
	defer unlock()
	for _, a := range plan.ACEs {
		if err := addACE(call, a); err != nil {
			return nil, errors.Join(err, g.revokeLocked())
		}
		g.applied = append(g.applied, a)
	}
	return g, nil
}

// revoke removes every explicit ACE for the call SID from the paths it was
// added to, newest first.
func (g *grants) revoke() error {
	unlock, err := lockACLs()
	if err != nil {
		return err
	}
	defer unlock()
	return g.revokeLocked()
}

func (g *grants) revokeLocked() error {
	var errs []error
	for i := len(g.applied) - 1; i >= 0; i-- {
		errs = append(errs, removeACEs(g.call, g.applied[i].Path))
	}
	g.applied = nil
	return errors.Join(errs...)
}

func lockACLs() (func(), error) {
	name, _ := windows.UTF16PtrFromString(aclLockName)
	m, err := windows.CreateMutex(nil, false, name)
	if err != nil && !errors.Is(err, windows.ERROR_ALREADY_EXISTS) {
		return nil, fmt.Errorf("CreateMutex %s: %w", aclLockName, err)
	}
	if ev, err := windows.WaitForSingleObject(m, windows.INFINITE); err != nil || (ev != windows.WAIT_OBJECT_0 && ev != windows.WAIT_ABANDONED) {
		windows.CloseHandle(m)
		return nil, fmt.Errorf("WaitForSingleObject %s: %v (event %#x)", aclLockName, err, ev)
	}
	return func() { windows.ReleaseMutex(m); windows.CloseHandle(m) }, nil
}

// dacl reads path's DACL and the flag that keeps its protection as it is.
func dacl(path string) (*windows.ACL, windows.SECURITY_INFORMATION, error) {
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return nil, 0, fmt.Errorf("GetNamedSecurityInfo %s: %w", path, err)
	}
	acl, _, err := sd.DACL()
	if err != nil {
		return nil, 0, fmt.Errorf("GetSecurityDescriptorDacl %s: %w", path, err)
	}
	ctl, _, err := sd.Control()
	if err != nil {
		return nil, 0, fmt.Errorf("GetSecurityDescriptorControl %s: %w", path, err)
	}
	prot := windows.SECURITY_INFORMATION(windows.UNPROTECTED_DACL_SECURITY_INFORMATION)
	if ctl&windows.SE_DACL_PROTECTED != 0 {
		prot = windows.PROTECTED_DACL_SECURITY_INFORMATION
	}
	return acl, prot, nil
}

func addACE(call *windows.SID, a ACE) error {
	old, prot, err := dacl(a.Path)
	if err != nil {
		return err
	}
	mode := windows.ACCESS_MODE(windows.GRANT_ACCESS)
	if a.Kind == Deny {
		mode = windows.DENY_ACCESS
	}
	inherit := uint32(windows.NO_INHERITANCE)
	if a.Inherit == InheritTree {
		inherit = windows.SUB_CONTAINERS_AND_OBJECTS_INHERIT
	}
	entry := windows.EXPLICIT_ACCESS{
		AccessPermissions: windows.ACCESS_MASK(a.Mask),
		AccessMode:        mode,
		Inheritance:       inherit,
		Trustee: windows.TRUSTEE{TrusteeForm: windows.TRUSTEE_IS_SID, TrusteeType: windows.TRUSTEE_IS_UNKNOWN,
			TrusteeValue: windows.TrusteeValueFromSID(call)},
	}
	acl, err := windows.ACLFromEntries([]windows.EXPLICIT_ACCESS{entry}, old)
	if err != nil {
		return fmt.Errorf("SetEntriesInAcl %s: %w", a.Path, err)
	}
	if err := windows.SetNamedSecurityInfo(a.Path, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION|prot, nil, nil, acl, nil); err != nil {
		return fmt.Errorf("SetNamedSecurityInfo %s: %w", a.Path, err)
	}
	return nil
}

// removeACEs deletes the explicit allow and deny ACEs for call from path's
// DACL; inherited copies below it go when Windows re-propagates.
func removeACEs(call *windows.SID, path string) error {
	acl, prot, err := dacl(path)
	if err != nil || acl == nil {
		return err
	}
	changed := false
	for i := int(acl.AceCount) - 1; i >= 0; i-- {
		var ace *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(acl, uint32(i), &ace); err != nil {
			return fmt.Errorf("GetAce %s: %w", path, err)
		}
		t := ace.Header.AceType
		if (t != windows.ACCESS_ALLOWED_ACE_TYPE && t != windows.ACCESS_DENIED_ACE_TYPE) || ace.Header.AceFlags&windows.INHERITED_ACE != 0 {
			continue
		}
		if !(*windows.SID)(unsafe.Pointer(&ace.SidStart)).Equals(call) {
			continue
		}
		if r, _, e := procDeleteAce.Call(uintptr(unsafe.Pointer(acl)), uintptr(i)); r == 0 {
			return fmt.Errorf("DeleteAce %s: %w", path, e)
		}
		changed = true
	}
	if !changed {
		return nil
	}
	if err := windows.SetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION|prot, nil, nil, acl, nil); err != nil {
		return fmt.Errorf("SetNamedSecurityInfo %s: %w", path, err)
	}
	return nil
}
