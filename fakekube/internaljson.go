package fakekube

import (
	"encoding/json"
	"reflect"
)

// asInternal returns a copy of v whose struct types carry no JSON tags,
// so that it marshals as the real server's internal types do: every field
// under its Go name, none left out. The v1 types of the volume lifecycle
// have the fields of their internal counterparts in the same order; types
// that marshal themselves (quantities, times) and those of other packages
// that the internal types share (metav1) stay as they are.
func asInternal(v any) any {
	rv := reflect.ValueOf(v)
	out := reflect.New(untagged(rv.Type())).Elem()
	copyUntagged(out, rv)
	return out.Interface()
}

var jsonMarshaler = reflect.TypeOf((*json.Marshaler)(nil)).Elem()

// keepsTags says whether t marshals as it is: it marshals itself, or it
// is not one of the core API types.
func keepsTags(t reflect.Type) bool {
	return t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) ||
		(t.PkgPath() != "" && t.PkgPath() != "k8s.io/api/core/v1" && t.PkgPath() != "k8s.io/api/storage/v1")
}

func untagged(t reflect.Type) reflect.Type {
	switch t.Kind() {
	case reflect.Pointer:
		return reflect.PointerTo(untagged(t.Elem()))
	case reflect.Slice:
		return reflect.SliceOf(untagged(t.Elem()))
	case reflect.Map:
		return reflect.MapOf(t.Key(), untagged(t.Elem()))
	case reflect.Struct:
		if keepsTags(t) {
			return t
		}
		fields := make([]reflect.StructField, 0, t.NumField())
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			fields = append(fields, reflect.StructField{Name: f.Name, Type: untagged(f.Type)})
		}
		return reflect.StructOf(fields)
	}
	return t
}

func copyUntagged(dst, src reflect.Value) {
	if dst.Type() == src.Type() {
		dst.Set(src)
		return
	}
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		p := reflect.New(dst.Type().Elem())
		copyUntagged(p.Elem(), src.Elem())
		dst.Set(p)
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(dst.Type(), src.Len(), src.Len())
		for i := 0; i < src.Len(); i++ {
			copyUntagged(s.Index(i), src.Index(i))
		}
		dst.Set(s)
	case reflect.Map:
		if src.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(dst.Type(), src.Len())
		for it := src.MapRange(); it.Next(); {
			e := reflect.New(dst.Type().Elem()).Elem()
			copyUntagged(e, it.Value())
			m.SetMapIndex(it.Key(), e)
		}
		dst.Set(m)
	case reflect.Struct:
		for i := 0; i < dst.NumField(); i++ {
			copyUntagged(dst.Field(i), src.FieldByName(dst.Type().Field(i).Name))
		}
	default:
		dst.Set(src.Convert(dst.Type()))
	}
}
