/** The run-wide figures every scale fault test prints. */
import type { RoundsOutcome } from '../faults/rounds.js';
import { restartedByFaults } from '../faults/rounds.js';

/** One sentence of totals over a campaign. */
export function describeTotals(outcome: RoundsOutcome): string {
  const { records, witness, expectation } = outcome;
  const sum = (f: (r: RoundsOutcome['records'][number]) => number): number => records.reduce((n, r) => n + f(r), 0);
  return (
    `totals over ${records.length} faults: ${outcome.createdTotal} pods created, ${expectation.deletedUids.length} deleted, ${expectation.present.length} live at the end;` +
    ` duplicate sandboxes ${witness.duplicateCount} (every runtime reading of the run: ${witness.observations} readings, ${witness.pods} pods seen with a sandbox; besides, ${witness.abandonedAtCreation().length} half-made by a dying runtime and replaced);` +
    ` orphans after the faults ${sum((r) => r.damage.orphanSandboxes + r.damage.orphanContainers)};` +
    ` containers running at a fault and restarted by it ${restartedByFaults(records)} of ${sum((r) => r.ledger.runningAtFault)};` +
    ` created-not-started at a fault ${sum((r) => r.ledger.createdAtFault)} (${sum((r) => r.ledger.createdStarted)} started as they were, ${sum((r) => r.ledger.createdReplaced)} replaced, ${sum((r) => r.ledger.createdStartFailed)} failed with StartError and replaced);` +
    ` ledger problems ${sum((r) => r.ledgerProblems.length)}`
  );
}
