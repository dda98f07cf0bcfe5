#!/usr/bin/env node
// The `hearth` command (package.json bin): the CLI is TypeScript, run through tsx.
import { register } from 'tsx/esm/api';

register();
await import('./main.ts');
