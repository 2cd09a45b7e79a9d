#define nr_dms 2048
#define nr_samples 25000
#define nr_channels 1536
#define max_shift 650
#define nr_samples_per_channel (nr_samples+max_shift)
#define dm_first 0.0f
#define dm_step 0.02f
