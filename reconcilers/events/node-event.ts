/** Events about the Node itself (`kubectl describe node`), as the kubelet records them on its node reference. */

export interface NodeEvent {
  readonly type: 'Normal' | 'Warning';
  /** A kubelet node event reason: `Starting`, `NodeReady`, `NodeHasSufficientMemory`, `Rebooted`, … */
  readonly reason: string;
  readonly message: string;
}

/** The Node an event is about: its name and the UID the API server gave it. */
export interface NodeRef {
  readonly name: string;
  readonly uid: string;
}

/** Where node events go. Must not throw or block: events are best-effort, as in the kubelet. */
export interface NodeEventSink {
  recordNode(node: NodeRef, event: NodeEvent): void;
}
