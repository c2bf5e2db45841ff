#!/usr/bin/env node
// The installed entry point: runs the compiled command (`npm run build` writes dist/).
import '../dist/cmd/nodelet.js';
