"""What kcost reads files through: the one opener every file goes through (`files`: regular files only, within a
bound), and JSON and YAML documents read with the line of every value (`documents`, `plain_yaml`)."""
