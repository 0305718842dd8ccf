#!/usr/bin/env node
// The command's entry point: the built CLI (npm run build writes dist/), or its source under the
// workspace's `agentpass-source` condition (package.json "imports"). A file the repository holds,
// so npm links the command in the workspace before the first build.
import "#main";
