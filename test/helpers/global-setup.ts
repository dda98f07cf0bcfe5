import { ensureModels } from './fixtures.js';

export default function setup(): void {
  ensureModels();
}
