/* The vt_dataset handle: an index of image paths and labels (no pixels). */
#ifndef VT_DATASET_H
#define VT_DATASET_H

#include "core/core.h"

typedef struct vt_split_list {
    int n;
    char **paths;
    int *labels; /* classification: class id per image */
} vt_split_list;

struct vt_dataset {
    char err[VT_ERRMSG_MAX];
    vt_task task;
    char *root;
    int num_classes;
    char **class_names;
    vt_split_list split[3]; /* VT_SPLIT_TRAIN, VAL, TEST */
};

#endif
