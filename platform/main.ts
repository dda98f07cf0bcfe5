/** `npm start`: the node's entry point. Until the server lands it runs the engine demo. */
import { runDemo } from './demo.js';

await runDemo();
