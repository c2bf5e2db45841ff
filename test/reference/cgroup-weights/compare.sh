#!/usr/bin/env bash
# nodelet's cpu.shares → cpu.weight (reconcilers/cgroups/cgroupfs-v2.ts) against libcontainer's, the
# kubelet's (main.go, github.com/opencontainers/cgroups from the Go module proxy), for every shares
# value from 0 to 262150; and whether each weight reads back as shares that write the same weight.
# Prints one line; exits 1 on any difference. Not part of npm test (it builds Go).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
reference=$(mktemp)
trap 'rm -f "$reference"' EXIT
(cd "$here" && go run .) >"$reference"
cd "$repo"
REFERENCE="$reference" node --import tsx -e '
import { readFileSync } from "node:fs";
import { cpuSharesToWeight, cpuWeightToShares } from "./reconcilers/cgroups/cgroupfs-v2.ts";
const go = readFileSync(process.env.REFERENCE, "utf8").trim().split("\n").map(Number);
let differ = 0;
for (let shares = 0; shares < go.length; shares++) if (cpuSharesToWeight(shares) !== go[shares]) differ++;
let roundTrips = 0;
for (let shares = 2; shares <= 262144; shares++) {
  const weight = cpuSharesToWeight(shares);
  if (cpuSharesToWeight(cpuWeightToShares(weight)) !== weight) roundTrips++;
}
console.log(`shares 0..${go.length - 1}: ${differ} weights differ from opencontainers/cgroups; ${roundTrips} read-backs give another weight`);
process.exit(differ + roundTrips === 0 ? 0 : 1);
'
