// Package kubelist reads a cluster's objects, kind by kind, into typed
// slices: for the packages that read a whole cluster at once (explain's
// live snapshot, diff's end-of-step objects).
package kubelist

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Kind is one kind to list: its name in errors, and a List call that keeps
// what it lists (made by Into).
type Kind struct {
	What string
	List func(context.Context, metav1.ListOptions) error
}

// Into is the kind what, listed by list (a typed client's List method)
// into *dst; items picks the items out of the list.
func Into[L any, T any](what string, dst *[]T, list func(context.Context, metav1.ListOptions) (L, error), items func(L) []T) Kind {
	return Kind{What: what, List: func(ctx context.Context, opts metav1.ListOptions) error {
		l, err := list(ctx, opts)
		if err == nil {
			*dst = items(l)
		}
		return err
	}}
}

// All lists each kind with opts, in order, and stops at the first that
// fails: "listing <what>: <error>".
func All(ctx context.Context, opts metav1.ListOptions, kinds []Kind) error {
	for _, k := range kinds {
		if err := k.List(ctx, opts); err != nil {
			return fmt.Errorf("listing %s: %w", k.What, err)
		}
	}
	return nil
}
