/**
 * What the CRI client reports about each call, for the kubelet's runtime operation metrics
 * (`kubelet_runtime_operations_total`, `…_duration_seconds`, `…_errors_total`), and the
 * kubelet's name of each operation (its instrumented runtime and image services,
 * pkg/kubelet/kuberuntime/instrumented_services.go). As there, every call that reached the
 * transport counts, and every failure is an error, NotFound and cancellations included.
 */

/** One finished runtime call. */
export interface CriOperation {
  /** The kubelet's operation name, e.g. `run_podsandbox`. */
  readonly operation: string;
  readonly seconds: number;
  readonly failed: boolean;
}

/** Receives every finished call; must not throw (it runs on every runtime call's path). */
export interface CriMetrics {
  operation(record: CriOperation): void;
}

/** CRI methods whose kubelet name is not the method's snake case. */
const NAMES: Readonly<Record<string, string>> = {
  UpdateContainerResources: 'update_container',
};

/**
 * The kubelet's name of a CRI method: snake case, with `PodSandbox` as one word
 * (`RunPodSandbox` → `run_podsandbox`, `ListContainerStats` → `list_container_stats`).
 */
export function operationName(method: string): string {
  return (
    NAMES[method] ??
    method
      .replace(/PodSandbox/g, 'Podsandbox')
      .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
      .toLowerCase()
  );
}
