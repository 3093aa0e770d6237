"""Turn specs: kcost's own input format (token counts per turn), its pydantic models (`models`), the requests it
describes (`turnspec`) and its reader (`reader`)."""
