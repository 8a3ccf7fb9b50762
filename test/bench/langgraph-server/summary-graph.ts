/**
 * The graph LangGraph's own API server serves in the bench (langgraph.json): the service's own compileGraph for the
 * `summary` command of the fixture catalog (GENERATED_DIR), its nodes calling the same stand-in model (LOCAL_LLM_BASE)
 * through the service's model client with no queue in front of it, as the bench's in-process baseline does. Each token
 * reaches the API server's clients through LangGraph's custom stream mode.
 */
import { getWriter, MemorySaver } from '@langchain/langgraph';
import { loadCatalog } from '../../../src-server/assets/catalog';
import { loadConfig } from '../../../src-server/config';
import { compileGraph, executionConfig } from '../../../src-server/engine';
import { createModelProviders } from '../../../src-server/models/model-providers';
import { benchExecution, noQueue, quietHooks } from '../bench-table';

const entry = loadCatalog(process.env.GENERATED_DIR).get('summary');
if (!entry) throw new Error(`no summary command in the catalog at GENERATED_DIR (${process.env.GENERATED_DIR})`);

const models = createModelProviders(loadConfig({ LOCAL_LLM_BASE: process.env.LOCAL_LLM_BASE }), noQueue);

// Called inside the node's task, where LangGraph keeps the run's config: the writer of the run being streamed.
const hooks = quietHooks((node, text) => getWriter()?.({ node, text }));

// The execution's part of the config, without a thread: the API server names the thread of each run.
const { thread_id: _thread, ...execution } = executionConfig(
  '',
  benchExecution('langgraph-server', models, hooks),
).configurable;

// The API server puts its own (in-memory) checkpointer in place of this one before each run.
export const graph = compileGraph(entry, new MemorySaver()).withConfig({ configurable: execution });
