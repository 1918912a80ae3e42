package fakekube

import (
	"io"
	"os"
	"strconv"

	"google.golang.org/grpc/grpclog"
)

// kube-apiserver's etcd3 storage package, which the registry strategies
// fakekube validates with import (through k8s.io/apiserver's
// registry/generic), sends gRPC's log to klog in its init, warnings
// included: every dial of a CSI socket not listening yet would print a
// warning on csisim's stderr. This init, which runs after that one, puts
// back the logger gRPC makes by default (google.golang.org/grpc/grpclog,
// loggerv2.go: errors only, unless GRPC_GO_LOG_SEVERITY_LEVEL says more).
func init() {
	grpclog.SetLoggerV2(grpcDefaultLogger(os.Getenv("GRPC_GO_LOG_SEVERITY_LEVEL"),
		os.Getenv("GRPC_GO_LOG_VERBOSITY_LEVEL"), os.Stderr))
}

// grpcDefaultLogger is gRPC's default logger for the severity and
// verbosity levels of its environment variables, writing to w.
func grpcDefaultLogger(severity, verbosity string, w io.Writer) grpclog.LoggerV2 {
	errorW, warningW, infoW := io.Discard, io.Discard, io.Discard
	switch severity {
	case "", "ERROR", "error":
		errorW = w
	case "WARNING", "warning":
		warningW = w
	case "INFO", "info":
		infoW = w
	}
	v, err := strconv.Atoi(verbosity)
	if err != nil {
		v = 0
	}
	return grpclog.NewLoggerV2WithVerbosity(infoW, warningW, errorW, v)
}
