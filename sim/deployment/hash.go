package deployment

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/davecgh/go-spew/spew"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"
)

// PodTemplateHash is the pod-template-hash of a template: FNV-1a 32 of the
// template printed by go-spew (types, sorted keys, no methods), then the
// collision count's 8 little-endian bytes, rendered safe for names
// (kubernetes pkg/controller/controller_utils.go ComputeHash,
// pkg/util/hash DeepHashObject).
func PodTemplateHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	printer := spew.ConfigState{Indent: " ", SortKeys: true, DisableMethods: true, SpewKeys: true}
	printer.Fprintf(h, "%#v", *template)
	if collisionCount != nil {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, uint32(*collisionCount))
		h.Write(b)
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

func secondsOf(n int32) time.Duration { return time.Duration(n) * time.Second }
