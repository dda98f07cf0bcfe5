/** `npm run demo`: load ResNet-50 through the engine and print a prediction. */
import { runDemo } from './demo.js';

await runDemo();
