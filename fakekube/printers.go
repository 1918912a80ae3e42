package fakekube

import (
	"maps"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
)

// The printers here give `kubectl get` the columns the real API server's
// printers (kubernetes pkg/printers/internalversion) give: the same names,
// types, formats and priorities, and cells computed by the same rules. The
// server always prints the wide set; kubectl drops priority-1 columns unless
// asked for -o wide.

// kindPrinter prints one kind.
type kindPrinter struct {
	columns []metav1.TableColumnDefinition
	// row computes the cells (and, for pods, the row conditions) of one object.
	row func(pc *printContext, obj runtime.Object) metav1.TableRow
}

// printContext is what cells depend on beyond the object itself.
type printContext struct {
	// now is the server's clock when the table is made: ages count to it.
	now time.Time
	// defaultClass names the StorageClass that is printed "(default)".
	defaultClass string
}

// age is the real printers' translateTimestampSince: a human duration up to
// now, "<unknown>" for an unset time.
func (pc *printContext) age(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(pc.now.Sub(t.Time))
}

func (pc *printContext) microAge(t metav1.MicroTime) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(pc.now.Sub(t.Time))
}

// printerFor adapts a typed row function to kindPrinter.
func printerFor[T runtime.Object](columns []metav1.TableColumnDefinition, row func(pc *printContext, obj T) metav1.TableRow) kindPrinter {
	return kindPrinter{columns: columns, row: func(pc *printContext, obj runtime.Object) metav1.TableRow {
		return row(pc, obj.(T))
	}}
}

func cells(c ...any) metav1.TableRow { return metav1.TableRow{Cells: c} }

// Well-known names the printers read.
const (
	nodeRoleLabelPrefix          = "node-role.kubernetes.io/"
	nodeRoleLabel                = "kubernetes.io/role"
	isDefaultClassAnnotation     = "storageclass.kubernetes.io/is-default-class"
	betaIsDefaultClassAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
	nodeUnreachablePodReason     = "NodeLost"
	podInitializingReason        = "PodInitializing"
)

var (
	storageClassKind = schema.GroupKind{Group: storagev1.GroupName, Kind: "StorageClass"}
	// kindPrinters holds the printer of every kind that has one; it is built
	// once and only read. Kinds without one get defaultPrinter.
	kindPrinters = newKindPrinters()
)

// newKindPrinters gathers the printers of every API group's kinds.
func newKindPrinters() map[schema.GroupKind]kindPrinter {
	printers := map[schema.GroupKind]kindPrinter{}
	for _, group := range []map[schema.GroupKind]kindPrinter{
		corePrinters(), appsPrinters(), storagePrinters(), snapshotPrinters(),
	} {
		maps.Copy(printers, group)
	}
	return printers
}

// The columns every printer starts or ends with, and how the others are
// made: kubernetes pkg/printers/internalversion/printers.go takes their
// descriptions from the API types' field docs.
var (
	nameColumn = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]}
	ageColumn  = metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}
)

func column(name, typ, desc string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Description: desc}
}

// wide marks a column that kubectl shows only with -o wide.
func wide(c metav1.TableColumnDefinition) metav1.TableColumnDefinition { c.Priority = 1; return c }

// defaultPrinter is the real server's default table convertor, for kinds
// without a printer of their own: the name and the creation time as an
// RFC 3339 date, which kubectl shows as an age.
var defaultPrinter = kindPrinter{
	columns: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
		{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
	},
	row: func(_ *printContext, obj runtime.Object) metav1.TableRow {
		m, err := meta.Accessor(obj)
		if err != nil {
			return cells("", "")
		}
		return cells(m.GetName(), m.GetCreationTimestamp().UTC().Format(time.RFC3339))
	},
}

func derefOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}
