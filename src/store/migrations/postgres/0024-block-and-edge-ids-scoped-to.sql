-- block and edge ids scoped to their workflow: the workspace-wide ownership table goes
DROP TABLE workflow_element_ids
