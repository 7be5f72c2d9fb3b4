//go:build linux

package linux

import (
	"encoding/json"
	"reflect"
	"testing"

	supervise "github.com/sbx-sandbox/sbx/internal/enforce/linux/supervisor"
)

// TestStageSpecRoundTrip: every field of StageSpec, set, reaches the stage
// as it was: the payload's JSON carries the whole struct, and every step of
// the stage takes the spec it decoded. A field the JSON drops (unexported, tagged
// "-", a type that does not survive encoding) fails here, not as a stage
// that silently skips a step.
func TestStageSpecRoundTrip(t *testing.T) {
	var want StageSpec
	fill(t, reflect.ValueOf(&want).Elem(), "StageSpec")
	v := reflect.ValueOf(want)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("fill left StageSpec.%s zero", v.Type().Field(i).Name)
		}
	}
	b, err := json.Marshal(stagePayload{Plan: &(&Plan{StageSpec: want}).StageSpec})
	if err != nil {
		t.Fatal(err)
	}
	var pl stagePayload
	if err := json.Unmarshal(b, &pl); err != nil {
		t.Fatal(err)
	}
	got := *pl.Plan
	gv := reflect.ValueOf(got)
	for i := range v.NumField() {
		if !reflect.DeepEqual(gv.Field(i).Interface(), v.Field(i).Interface()) {
			t.Errorf("StageSpec.%s did not reach the stage: got %#v, want %#v", v.Type().Field(i).Name,
				gv.Field(i).Interface(), v.Field(i).Interface())
		}
	}
}

// fill sets v, and everything it holds, to a non-zero value: true, 7, "x",
// one-element slices, pointers to filled values.
func fill(t *testing.T, v reflect.Value, name string) {
	t.Helper()
	if !v.CanSet() {
		t.Fatalf("%s cannot be set: an unexported field does not reach the stage", name)
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.String:
		v.SetString("x")
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(t, v.Index(0), name+"[0]")
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), name)
	case reflect.Struct:
		for i := range v.NumField() {
			fill(t, v.Field(i), name+"."+v.Type().Field(i).Name)
		}
	default:
		t.Fatalf("%s: fill has no value for a %s", name, v.Kind())
	}
}

// The stage's Landlock and seccomp loads take the StageSpec, never a Plan
// (see stagePayload): this fails to compile should one take a Plan again,
// which would let it read a field the stage never receives.
var (
	_ func(*StageSpec) (supervise.Listener, error) = restrictThread
	_ func(*StageSpec) (supervise.Listener, error) = loadFilter
)
